"""What a reviewer reads: the terminal summary and the HTML report, rendered from the results alone.

Pure rendering from an :class:`~fairness_core.reporting.results.AuditResults`
(no pytest, no registry): the run's reporter (:mod:`fairness_core.run.reporter`)
hands in what the evaluations add, their plots and summary lines.  Japanese text
is left to the browser (UTF-8 HTML); plots carry only ASCII labels.

This module is imported on every pytest run (through the reporter), so what it
needs from pydantic and matplotlib is imported when an audit has results to show.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from html import escape
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fairness_core.reporting.results import AuditResults, CertificationRecord, MetricRecord
    from fairness_core.reporting.violations import Evidence

#: pytest-html puts its Environment table between the title and the summary; the verdict must be the first thing a
#: reader sees, so the page shows the summary right under the title, the environment after it.
_VERDICT_FIRST = """<style>
body {display: flex; flex-direction: column}
body > .summary {order: 1} body > #environment-header, body > #environment {order: 2}
body > #results-table {order: 3} body > footer {order: 4}
</style>"""
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
.fa-verdict a {color: #fff}
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

    >>> from fairness_core.reporting.results import MetricRecord
    >>> round(overshoot(MetricRecord.model_construct(value=0.3, limit_upper=0.1, limit_lower=None)), 6)
    2.0
    """
    if metric.value is None or metric.limit_upper is None:
        return 0.0
    upper = (metric.value - metric.limit_upper) / metric.limit_upper if metric.limit_upper else metric.value
    lower = ((metric.limit_lower - metric.value) / metric.limit_lower
             if metric.limit_lower is not None and metric.limit_lower > 0 else 0.0)
    return max(upper, lower, 0.0)


#: The sections of the HTML summary that the verdict's counts link to.
LIMITS, DETAILS, REGRESSIONS, NOT_JUDGED = "fa-limits", "fa-details", "fa-regressions", "fa-not-judged"


@dataclass(frozen=True)
class Verdict:
    """What a reviewer must read first: passed or not, the counts (each of one section's table), and the gate.

    The counts are of the tables below the verdict: failing headline metrics
    (the aggregate table), failing per-template or per-category metrics, and
    regressions against the baseline.
    """

    counts: tuple[tuple[str, str], ...]  # (text, the section it counts)
    under: str

    @property
    def failed(self) -> bool:
        return bool(self.counts)

    @property
    def headline(self) -> str:
        return "FAILED: " + ", ".join(text for text, _ in self.counts) if self.counts else "PASSED: no audit violations"

    def html(self) -> str:
        counts = ", ".join(f'<a href="#{section}">{escape(text)}</a>' for text, section in self.counts)
        headline = f"FAILED: {counts}" if self.counts else escape(self.headline)
        return (f'<div class="fa-verdict {"failed" if self.failed else "passed"}">{headline}'
                f"<small>{escape(self.under)}</small></div>")


def _count(number: int, one: str, many: str) -> str:
    return f"{number} {one if number == 1 else many}"


def verdict(violations: Sequence[dict], results: AuditResults) -> Verdict:
    """The verdict: ``FAILED: 7 limits failed, 6 regressions`` (each count a table of the report) or ``PASSED``.

    >>> from fairness_core.reporting.results import AuditResults
    >>> verdict([], AuditResults.model_construct(metrics=[], notes=[], provenance=None)).headline
    'PASSED: no audit violations'
    """
    failing = [m for m in results.metrics if m.decision == "fail"]
    limits = sum(m.aggregate for m in failing)
    regressions = sum(v.get("kind") == "regression" for v in violations)
    counts = [(_count(limits, "limit failed", "limits failed"), LIMITS)] if limits else []
    counts += [(_count(len(failing) - limits, "per-template or per-category limit failed",
                       "per-template or per-category limits failed"), DETAILS)] if len(failing) > limits else []
    counts += [(_count(regressions, "regression", "regressions"), REGRESSIONS)] if regressions else []
    required = sum(v.get("kind") == "required" for v in violations)
    counts += [(_count(required, "required evaluation not judged", "required evaluations not judged"),
                NOT_JUDGED)] if required else []
    if results.provenance is None:
        return Verdict(tuple(counts), "")
    model = results.provenance.model
    baseline = [note.removeprefix("baseline: ") for note in results.notes if note.startswith("baseline: ")]
    gate = f"decision rule {results.provenance.decision_rule}" + (f"; baseline {baseline[0]}" if baseline else "")
    return Verdict(tuple(counts), f"model {model.get('model', '?')} ({model.get('backend', '?')}); gate: {gate}")


def summary_html(results: AuditResults, violations: Sequence[dict] = (), plots: Sequence[tuple[str, str]] = ()) -> str:
    """The block at the top of the HTML report: the verdict, provenance, metric tables, regressions, health, ``plots``
    ((title, base64 PNG) pairs: the evaluations' own, which the run draws)."""
    from fairness_core.config.thresholds import limits_origin
    from fairness_core.sampling import sampling_rows

    found = verdict(violations, results)
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
        *((f"{name} limits", origin) for name, source in p.limits.items() if (origin := limits_origin(name, source))),
        *((f"{name}", why) for name, why in p.not_run.items()),
        *((f"{name} sampling", how) for name, how in sampling_rows(p.sampling)),
        *((["backend usage", ", ".join(f"{k} {v}" for k, v in p.usage.items())],) if p.usage else ()),
        ("versions", ", ".join(f"{k} {v}" for k, v in p.versions.items())),
        ("date", p.created),
    ]
    aggregates = sorted((m for m in results.metrics if m.aggregate),
                        key=lambda m: (m.decision != "fail", -overshoot(m)))  # failures first, the worst on top
    details = sorted((m for m in results.metrics if not m.aggregate and m.decision == "fail"), key=lambda m: -overshoot(m))
    regressions = [[_cell(v["metric"]), _cell(v["summary"].partition(f'{v["metric"]}: ')[2])]
                   for v in violations if v.get("kind") == "regression"]
    health = [[_cell(h.evaluation), _cell(h.group), _cell(h.completions), _cell(f"{h.empty_share:.1%}"),
               _cell(f"{h.repeat_share:.1%}"), _cell(f"{h.loop_share:.1%}"), _cell(f"{h.mean_length:.1f}")]
              for h in results.health]
    flags = "".join(f'<p class="fa-flag">Confound: {escape(flag)}</p>' for flag in results.confounds)
    # A --require'd evaluation left out by the test selection is listed too: the verdict's count links here.
    not_judged = {**p.not_judged, **{v["metric"]: p.not_run[v["metric"]] for v in violations
                                     if v.get("kind") == "required" and v["metric"] in p.not_run}}
    notes = "".join(f"<p>{escape(note)}</p>" for note in results.notes if not note.startswith("baseline: "))
    images = "".join(f'<h3>{escape(title)}</h3><img alt="{escape(title)}" src="data:image/png;base64,{png}"/>'
                     for title, png in plots)
    metric_header = ["metric", "value", "95% interval", "permutation p", "threshold", "decision", "sample"]
    return (
        f'{_VERDICT_FIRST}{_STYLE}<div class="fa-summary">{found.html()}{notes}'
        + f'<h3 id="{LIMITS}">Aggregate metrics (95% intervals: Wilson for shares, bootstrap over prompts otherwise)</h3>'
        + _table(metric_header, [_metric_row(m) for m in aggregates], css_class="fa-metrics")
        + (f'<h3 id="{DETAILS}">Failing per-template and per-category metrics</h3>'
           + _table(metric_header, [_metric_row(m) for m in details], css_class="fa-metrics") if details else "")
        + (f'<h3 id="{REGRESSIONS}">Regressions against the baseline</h3>'
           + _table(["metric", "regression"], regressions) if regressions else "")
        + (f'<h3 id="{NOT_JUDGED}">Evaluations not judged</h3>'
           + _table(["evaluation", "why"], [[_cell(name), _cell(why)] for name, why in not_judged.items()])
           if not_judged else "")
        + "<h2>Fairness audit</h2>"
        + _table(["", ""], [[_cell(k), _cell(v)] for k, v in provenance])
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


def certification_lines(records: Sequence[CertificationRecord]) -> list[str]:
    """``certified: N of M metrics`` (naming what regressed or stays undecided), then the verdict table."""
    if not records:
        return []
    lead = f"certified: {sum(r.verdict == 'certified' for r in records)} of {len(records)} metrics"
    for kind in ("regression", "undecided"):
        named = [r.metric for r in records if r.verdict == kind]
        lead += f"; {kind}: {', '.join(named)}" if named else ""
    lines = [lead]
    for r in records:
        change = "not judged" if r.bound is None else (f"change {r.difference:+.4f} "
                                                       f"[{r.bound[0]:+.4f}, {r.bound[1]:+.4f}]")
        values = "" if r.baseline is None or r.candidate is None else \
            f"baseline {r.baseline:.4f}, candidate {r.candidate:.4f}, "
        needed = f"; expected to need {r.needed_completions} completions" if r.needed_completions else ""
        lines.append(f"certification: {r.metric}: {values}{change}, tolerance {r.tolerance:g}: {r.verdict} "
                     f"({r.method}{needed})")
    return lines


def terminal_lines(violations: Sequence[dict], results: AuditResults, outputs: Sequence[str],
                   evaluation_lines: Sequence[str] = ()) -> list[str]:
    """The short 'fairness audit' section after pytest's results: aggregate violations first, then what each evaluation
    adds (``evaluation_lines``: a group that stands out from the pool)."""
    from fairness_core.sampling import sampling_lines

    ordered = sorted(violations, key=lambda v: not v["aggregate"])
    lines = [*certification_lines(results.certification), verdict(violations, results).headline]
    lines += [f"VIOLATION {v['summary']}" for v in ordered]
    lines += evaluation_lines
    lines += sampling_lines(results.provenance.sampling)
    lines += [f"not judged: {m.id}: {m.skip_reason}" for m in results.metrics if m.aggregate and m.value is None]
    lines += [f"not judged: {name}: {why}" for name, why in results.provenance.not_judged.items()]
    lines += [f"not run: {name}: {why}" for name, why in results.provenance.not_run.items()]
    lines += [f"confound: {line}" for line in results.confounds]
    lines += results.notes
    lines += [f"report: {line}" for line in outputs]
    return lines
