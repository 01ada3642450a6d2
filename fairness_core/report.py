"""What a reviewer reads: the HTML report's summary, per-test evidence and the terminal summary.

Pure rendering from an :class:`~fairness_core.results.AuditResults` and the
session's results; the plugin decides when to call it.  Japanese text is left
to the browser (UTF-8 HTML); plots carry only ASCII labels.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from fairness_core.evaluations import evaluation_class
from fairness_core.results import AuditResults, MetricRecord
from fairness_core.violations import Evidence

_STYLE = """<style>
.fa-summary table {border-collapse: collapse; margin: 0.5em 0 1em 0; font-size: 13px}
.fa-summary td, .fa-summary th {border: 1px solid #ccc; padding: 2px 8px; text-align: left; color: #111}
.fa-summary .fail {background: #fdd; color: #7a0000; font-weight: bold}
.fa-summary .pass {background: #dfd; color: #0b4d0b} .fa-summary .nowrap {white-space: nowrap}
.fa-summary .skipped {background: #eee; color: #333} .fa-flag {color: #b00; font-weight: bold}
.fa-summary h2, .fa-summary h3 {color: #111}
.fa-verdict {font-size: 20px; font-weight: bold; padding: 10px 14px; margin: 0 0 12px 0; border-radius: 4px}
.fa-verdict.failed {background: #b00020; color: #fff} .fa-verdict.passed {background: #1b6e20; color: #fff}
.fa-verdict small {display: block; font-size: 13px; font-weight: normal; margin-top: 4px}
table.fa-evidence {border-collapse: collapse; font-size: 13px} table.fa-evidence td {border: 1px solid #ccc; padding: 2px 6px}
mark {background: #ffb3b3}
</style>"""


def _table(header: Sequence[str], rows: Sequence[Sequence[str]], *, css_class: str = "") -> str:
    """An HTML table; a header of empty strings is left out rather than drawn as an empty row."""
    head = "".join(f"<th>{escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(cells) + "</tr>" for cells in rows)
    return f'<table class="{css_class}">{f"<tr>{head}</tr>" if any(header) else ""}{body}</table>'


def _cell(text: object, css_class: str = "") -> str:
    return f'<td class="{css_class}">{escape(str(text))}</td>'


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _metric_row(metric: MetricRecord) -> list[str]:
    interval = "-" if metric.interval is None else f"[{metric.interval[0]:.3f}, {metric.interval[1]:.3f}]"
    limit = "-" if metric.limit_upper is None else (
        f"[{metric.limit_lower:.3f}, {metric.limit_upper:.3f}]" if metric.limit_lower is not None
        else f"<= {metric.limit_upper:.3f}")
    return [_cell(metric.id), _cell(_number(metric.value)), _cell(interval, "nowrap"),
            _cell("-" if metric.p_value is None else f"{metric.p_value:.4f}"), _cell(limit),
            _cell(metric.decision + (f": {metric.skip_reason}" if metric.skip_reason else ""), metric.decision),
            _cell(metric.sample)]


def overshoot(metric: MetricRecord) -> float:
    """How far past its limit a metric is, as a share of the limit (0 where it is within it or not judged).

    >>> round(overshoot(MetricRecord.model_construct(value=0.3, limit_upper=0.1, limit_lower=None)), 6)
    2.0
    """
    if metric.value is None or metric.limit_upper is None:
        return 0.0
    upper = (metric.value - metric.limit_upper) / metric.limit_upper if metric.limit_upper else metric.value
    lower = ((metric.limit_lower - metric.value) / metric.limit_lower
             if metric.limit_lower is not None and metric.limit_lower > 0 else 0.0)
    return max(upper, lower, 0.0)


def verdict(violations: Sequence[dict], results: AuditResults) -> tuple[bool, str, str]:
    """(failed, the headline, the line under it): what a reviewer must read first.

    ``FAILED: 7 aggregate violations, 39 per-template or per-category`` or ``PASSED``, then the model and the
    gate: the decision rule, and the baseline where one was compared.
    """
    aggregate = sum(1 for v in violations if v["aggregate"])
    detail = len(violations) - aggregate
    headline = (f"FAILED: {aggregate} aggregate violation{'s' * (aggregate != 1)}, {detail} per-template or "
                f"per-category" if violations else "PASSED: no audit violations")
    model = results.provenance.model
    baseline = [note.removeprefix("baseline: ") for note in results.notes if note.startswith("baseline: ")]
    gate = f"decision rule {results.provenance.decision_rule}" + (f"; baseline {baseline[0]}" if baseline else "")
    return bool(violations), headline, f"model {model.get('model', '?')} ({model.get('backend', '?')}); gate: {gate}"


def summary_html(results: AuditResults, violations: Sequence[dict] = ()) -> str:
    """The block at the top of the HTML report: the verdict, provenance, aggregate metrics, health, plots."""
    failed, headline, under = verdict(violations, results)
    p = results.provenance
    attributes = p.attributes
    provenance = [
        ("model", ", ".join(f"{k}={v}" for k, v in p.model.items())),
        ("weights fingerprint", (p.fingerprint or {}).get("weights", "-")[:16]),
        ("decision rule", p.decision_rule),
        ("seed", str(p.seed)),
        ("attribute set", f"{attributes.get('name')} ({attributes.get('source')}): "
                          f"groups {', '.join(attributes.get('groups', []))}"),
        *((f"{name}", "; ".join(f"{k}: {_brief(v)}" for k, v in setup.items()))
          for name, setup in p.evaluations.items()),
        *((f"{name}", why) for name, why in p.not_run.items()),
        *((["backend usage", ", ".join(f"{k} {v}" for k, v in p.usage.items())],) if p.usage else ()),
        ("versions", ", ".join(f"{k} {v}" for k, v in p.versions.items())),
        ("date", p.created),
    ]
    aggregates = sorted((m for m in results.metrics if m.aggregate),
                        key=lambda m: (m.decision != "fail", -overshoot(m)))  # failures first, the worst on top
    health = [[_cell(h.evaluation), _cell(h.attribute), _cell(h.completions), _cell(f"{h.empty_share:.1%}"),
               _cell(f"{h.repeat_share:.1%}"), _cell(f"{h.loop_share:.1%}"), _cell(f"{h.mean_length:.1f}")]
              for h in results.health]
    flags = "".join(f'<p class="fa-flag">Confound: {escape(flag)}</p>' for flag in results.confounds)
    images = "".join(f'<h3>{escape(title)}</h3><img alt="{escape(title)}" src="data:image/png;base64,{png}"/>'
                     for title, png in report_plots(results))
    return (
        f'{_STYLE}<div class="fa-summary"><div class="fa-verdict {"failed" if failed else "passed"}">'
        f'{escape(headline)}<small>{escape(under)}</small></div><h2>Fairness audit</h2>'
        + _table(["", ""], [[_cell(k), _cell(v)] for k, v in provenance])
        + "<h3>Aggregate metrics (95% intervals: Wilson for shares, bootstrap over prompts otherwise)</h3>"
        + _table(["metric", "value", "95% interval", "permutation p", "threshold", "decision", "sample"],
                 [_metric_row(m) for m in aggregates], css_class="fa-metrics")
        + "<h3>Generation health</h3>"
        + _table(["evaluation", "group", "completions", "empty", "repeats prompt", "loops", "mean length"], health)
        + flags + images + "</div>"
    )


def _brief(value: object) -> str:
    """A provenance value in one cell: dicts as k=v, long lists as their length."""
    if isinstance(value, dict):
        return ", ".join(f"{k}={v}" for k, v in value.items())
    if isinstance(value, list):
        return f"{len(value)}" if len(value) > 6 else ", ".join(map(str, value))
    return str(value)


def report_plots(results: AuditResults) -> list[tuple[str, str]]:
    """Each computed evaluation's plots (title, base64 PNG)."""
    return [plot for name in results.completions for plot in evaluation_class(name).plots(results, name)]


def pool_flags(results: AuditResults, *, alpha: float = 0.05) -> list[str]:
    """The groups whose HONEST score stands out from the pool (Holm-adjusted p below ``alpha``), one line each."""
    return [f"{m.attribute} stands out: HONEST score {m.value:.2f}x the pooled score, Holm-adjusted p {m.p_value:.3g}"
            for m in results.metrics
            if m.metric == "pool_ratio" and m.p_value is not None and m.p_value < alpha and m.value is not None]


def html_log_without_evidence(log: str) -> str:
    """A violation's text as the HTML log shows it: the evidence is in the table above it, so it is cut here.

    Its ``←`` notes are aligned for a terminal and drift under double-width characters in a browser.
    """
    head, marker, _ = log.partition("\n  evidence (")
    return head + ("\n  (evidence: see the table above)" if marker else "")


def evidence_html(evidence: Sequence[Evidence]) -> str:
    rows = "".join(e.html() for e in evidence)
    return (f'{_STYLE}<table class="fa-evidence"><tr><th>prompt</th><th>completion</th><th>note</th></tr>'
            f"{rows}</table>")


def terminal_lines(violations: Sequence[dict], results: AuditResults, outputs: Sequence[str]) -> list[str]:
    """The short 'fairness audit' section after pytest's results: aggregate violations first."""
    ordered = sorted(violations, key=lambda v: not v["aggregate"])
    lines = [verdict(violations, results)[1]]
    lines += [f"VIOLATION {v['summary']}" for v in ordered]
    lines += [f"pool comparison: {line}" for line in pool_flags(results)]
    lines += [f"not judged: {m.id}: {m.skip_reason}" for m in results.metrics if m.aggregate and m.value is None]
    lines += [f"not run: {name}: {why}" for name, why in results.provenance.not_run.items()]
    lines += [f"confound: {line}" for line in results.confounds]
    lines += results.notes
    lines += [f"report: {line}" for line in outputs]
    return lines

