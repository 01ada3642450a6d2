"""What a reviewer reads: the HTML report's summary, per-test evidence and the terminal summary.

Pure rendering from an :class:`~fairness_core.results.AuditResults` and the
session's results; the plugin decides when to call it.  Japanese text is left
to the browser (UTF-8 HTML); plots carry only ASCII labels.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from html import escape

from fairness_core.plots import honest_by_template, sentiment_ecdf
from fairness_core.results import AuditResults, MetricRecord
from fairness_core.violations import Evidence

_STYLE = """<style>
.fa-summary table {border-collapse: collapse; margin: 0.5em 0 1em 0; font-size: 13px}
.fa-summary td, .fa-summary th {border: 1px solid #ccc; padding: 2px 8px; text-align: left}
.fa-summary .fail {background: #fdd; font-weight: bold} .fa-summary .pass {background: #dfd}
.fa-summary .skipped {background: #eee} .fa-flag {color: #b00; font-weight: bold}
table.fa-evidence {border-collapse: collapse; font-size: 13px} table.fa-evidence td {border: 1px solid #ccc; padding: 2px 6px}
mark {background: #ffb3b3}
</style>"""


def _table(header: Sequence[str], rows: Sequence[Sequence[str]], *, css_class: str = "") -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(cells) + "</tr>" for cells in rows)
    return f'<table class="{css_class}"><tr>{head}</tr>{body}</table>'


def _cell(text: object, css_class: str = "") -> str:
    return f'<td class="{css_class}">{escape(str(text))}</td>'


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _metric_row(metric: MetricRecord) -> list[str]:
    interval = "-" if metric.interval is None else f"[{metric.interval[0]:.3f}, {metric.interval[1]:.3f}]"
    limit = "-" if metric.limit_upper is None else (
        f"[{metric.limit_lower:.3f}, {metric.limit_upper:.3f}]" if metric.limit_lower is not None
        else f"<= {metric.limit_upper:.3f}")
    return [_cell(metric.id), _cell(_number(metric.value)), _cell(interval),
            _cell("-" if metric.p_value is None else f"{metric.p_value:.4f}"), _cell(limit),
            _cell(metric.decision + (f": {metric.skip_reason}" if metric.skip_reason else ""), metric.decision),
            _cell(metric.sample)]


def summary_html(results: AuditResults, plots: Sequence[tuple[str, str]]) -> str:
    """The block at the top of the HTML report: provenance, aggregate metrics, health, plots."""
    p = results.provenance
    provenance = [
        ("model", ", ".join(f"{k}={v}" for k, v in p.model.items())),
        ("weights fingerprint", (p.fingerprint or {}).get("weights", "-")[:16]),
        ("decision rule", p.decision_rule),
        ("seed", str(p.seed)),
        *((f"protocol ({name})", ", ".join(f"{k}={v}" for k, v in protocol.items()))
          for name, protocol in p.protocols.items()),
        ("templates", ", ".join(f"{name}: {len(ids)}" for name, ids in p.templates.items())),
        ("identity pairs / names", f"{len(p.identity_terms)} pairs; "
                                   + ", ".join(f"{a}: {len(n)}" for a, n in p.names.items())),
        ("hurtful lexicon", f"{p.lexicon['source']} ({p.lexicon['level']}, {p.lexicon['entries']} entries)"),
        ("sentiment scorer", p.sentiment_scorer),
        ("versions", ", ".join(f"{k} {v}" for k, v in p.versions.items())),
        ("date", p.created),
    ]
    aggregates = [m for m in results.metrics if m.aggregate]
    health = [[_cell(h.evaluation), _cell(h.attribute), _cell(h.completions), _cell(f"{h.empty_share:.1%}"),
               _cell(f"{h.repeat_share:.1%}"), _cell(f"{h.loop_share:.1%}"), _cell(f"{h.mean_length:.1f}")]
              for h in results.health]
    flags = "".join(f'<p class="fa-flag">Confound: {escape(flag)}</p>' for flag in results.confounds)
    images = "".join(f'<h3>{escape(title)}</h3><img alt="{escape(title)}" src="data:image/png;base64,{png}"/>'
                     for title, png in plots)
    return (
        f'{_STYLE}<div class="fa-summary"><h2>Fairness audit</h2>'
        + _table(["", ""], [[_cell(k), _cell(v)] for k, v in provenance])
        + "<h3>Aggregate metrics (95% intervals: Wilson for shares, bootstrap over prompts otherwise)</h3>"
        + _table(["metric", "value", "95% interval", "permutation p", "threshold", "decision", "sample"],
                 [_metric_row(m) for m in aggregates], css_class="fa-metrics")
        + "<h3>Generation health</h3>"
        + _table(["evaluation", "attribute", "completions", "empty", "repeats prompt", "loops", "mean length"], health)
        + flags + images + "</div>"
    )


def report_plots(session) -> list[tuple[str, str]]:
    """The plots of what the session has computed (title, base64 PNG)."""
    computed = session.computed()
    plots = []
    if "honest" in computed:
        plots.append(("HONEST score per template and attribute",
                      honest_by_template(session.honest, threshold=session.config.honest.max_template_score)))
    if "sentiment" in computed:
        plots.append(("Sentiment score distribution per attribute (ECDF)", sentiment_ecdf(session.sentiment)))
    return plots


def evidence_html(evidence: Sequence[Evidence]) -> str:
    rows = "".join(e.html() for e in evidence)
    return (f'{_STYLE}<table class="fa-evidence"><tr><th>prompt</th><th>completion</th><th>note</th></tr>'
            f"{rows}</table>")


def terminal_lines(violations: Sequence[str], skipped: Sequence[str], confounds: Sequence[str],
                   outputs: Sequence[str]) -> list[str]:
    """The short 'fairness audit' section after pytest's results.

    Violations come aggregate first (the deploy decision), then per template,
    each group in the order the tests ran.

    >>> terminal_lines(["honest.honest_score[template=t1,attribute=female]: 0.5 > 0.3",
    ...                 "honest.honest_ratio: 4.8 > 1.5"], [], [], [])
    ['VIOLATION honest.honest_ratio: 4.8 > 1.5', 'VIOLATION honest.honest_score[template=t1,attribute=female]: 0.5 > 0.3']
    """
    ordered = sorted(violations, key=_is_per_template)
    lines = [f"VIOLATION {line}" for line in ordered] or ["no audit violations"]
    lines += [f"not judged: {line}" for line in skipped]
    lines += [f"confound: {line}" for line in confounds]
    lines += [f"report: {line}" for line in outputs]
    return lines


def _is_per_template(violation: str) -> bool:
    """Whether a violation summary (``<metric id>: <verdict>``) is about one template: ``…[template=…]``."""
    return re.match(r"\S*\[[^\]]*\btemplate=", violation) is not None
