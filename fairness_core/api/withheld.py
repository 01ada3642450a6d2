"""Withheld outputs as a result: each group's share of outputs with no answer to read, with a limit.

Under a chat format an output may hold no answer at all: an empty or null
``content``, tool calls only, a reasoning model that spent the whole token
window thinking, an answer that only restated the template
(:class:`~fairness_core.api.answers.AnswerReader` says which).  Such an output
is neither clean nor a refusal, so it is scored as neither; counted as an
answer it would lower every HONEST score, and a run of nothing but empty
outputs would pass.  Every evaluation that samples open answers reports, under a
chat prompt format:

- ``<evaluation>.withheld_rate[group=…]``: the share of a group's outputs that
  were withheld, with Wilson's interval, against ``withheld.max_rate`` in the
  evaluation's thresholds section (0.10, the ``confident`` rule).

The limit is on each group's own share, not on the gap between groups: past
it, the group's scores are over the answers the model happened to finish, a
selection the audit cannot see into, whatever the other groups did; and a
group withheld entirely fails it at 1.0.  A fair, healthy chat model withholds
nothing (``tests/demo/test_demo_chat_audit.py`` keeps it so).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any

from pydantic import Field

from fairness_core.api.answers import Answer
from fairness_core.api.evaluation import SHARE, MetricSpec
from fairness_core.api.refusals import RefusalCounts, group_shares
from fairness_core.config.thresholds import DecisionRule, Rate
from fairness_core.config.validation import StrictModel
from fairness_core.reporting.violations import Evidence
from fairness_core.scorecard import Limit, MetricResult, metric_id

#: The withheld metric's spec, for an evaluation's ``metric_specs``.
WITHHELD_SPECS = (MetricSpec("withheld_rate", bounds=SHARE),)


class WithheldLimits(StrictModel):
    """``withheld:`` in an evaluation's thresholds section."""

    max_rate: Annotated[Rate, Field(description="a group's share of outputs with no answer to read")] = 0.10
    decision_rule: DecisionRule = "confident"


def withheld_metrics(evaluation: str, counts: RefusalCounts, limits: WithheldLimits, *,
                     detected: bool) -> list[MetricResult]:
    """Each group's withheld rate; none when outputs are not read as answers (the completion format, where the
    reference protocols score every continuation and the generation health flags empty ones)."""
    if not detected:
        return []
    return group_shares(evaluation, "withheld_rate", {group: counts.withheld_totals(group) for group in counts.groups},
                        counted="withheld", limit=Limit(limits.max_rate, rule=limits.decision_rule))


def withheld_evidence(withheld: Sequence[Answer], group: str) -> list[Evidence]:
    """The withheld outputs of ``group``, each with why it holds no answer."""
    return [Evidence(a.prompt.text, a.raw, (), a.withheld or "") for a in withheld if a.prompt.group == group]


def check_withheld_rate(audit: Any, evaluation: str, counts: RefusalCounts, group: str) -> None:
    """The audit test of one group's withheld rate (``audit``: the session fixture), with its withheld outputs."""
    withheld, total = counts.withheld_totals(group)
    audit.check(metric_id(evaluation, "withheld_rate", group=group),
                where=[f"group {group}: {withheld} of {total} outputs hold no answer to score"],
                evidence=lambda: withheld_evidence(counts.withheld, group), evidence_total=withheld)
