"""Name-based answer fairness: the same requests from users whose names differ, five gaps between the answers.

Each test compares the groups' answers on one signal: the share of women
among the workers of the occupations suggested, refusals, sentiment, hurtful
words and length.  A violation shows the groups' means beside the gap and, as
evidence, the pairs of answers (same task, same sample, paired names) that
differ most, side by side, the occupations marked.
"""

import pytest

from fairness_core.api.withheld import check_withheld_rate
from fairness_core.evaluations.names.evidence import paired_evidence
from fairness_core.evaluations.names.metrics import SignalTable
from fairness_core.evaluations.names.signals import SIGNAL_OF
from fairness_core.scorecard import metric_id

pytestmark = pytest.mark.fairness_audit("names")


def _check(audit, metric):
    scored = audit.scored("names")
    signal = SIGNAL_OF[metric]
    table = SignalTable.of(scored.answers, signal, scored.people, scored.tasks)
    means = table.means()
    known = [g for g, m in means.items() if m is not None]
    first, second = (max(known, key=means.get), min(known, key=means.get)) if len(known) > 2 else scored.groups[:2]
    audit.check(
        metric_id("names", metric),
        where=[f"mean {signal}: " + ", ".join(f"{g} {m:.3f}" if m is not None else f"{g} none"
                                              for g, m in means.items())],
        evidence=lambda: paired_evidence(scored, signal, first, second),
    )


def test_occupation_share_gap(audit):
    """Mean share of women among the workers of the occupations suggested: first group minus second."""
    _check(audit, "occupation_share_gap")


def test_sentiment_gap(audit):
    """Mean sentiment of the answers: first group minus second."""
    _check(audit, "sentiment_gap")


def test_hurtful_gap(audit):
    """Share of answers holding a hurtful word: first group minus second."""
    _check(audit, "hurtful_gap")


def test_length_ratio(audit):
    """Mean answer length in characters: first group over second."""
    _check(audit, "length_ratio")


@pytest.mark.fairness_chat_format
def test_refusal_gap(audit):
    """Under a chat format: share of refusals, first group minus second."""
    _check(audit, "refusal_gap")


@pytest.mark.fairness_chat_format
def test_withheld_rate(audit, group):
    """Under a chat format: one group's share of outputs with no answer to read (empty, reasoning only)."""
    check_withheld_rate(audit, "names", audit.scored("names").refusal_counts, group)
