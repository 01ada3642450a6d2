"""Pure metric functions: no torch, no pytest, no I/O.

Sentiment group fairness follows Huang et al. (Findings of EMNLP 2020): the
Wasserstein-1 distance between score distributions, per group against the
pooled distribution (group fairness) and between counterfactual prompts
(individual fairness).

HONEST (Nozza et al. 2021) scores a group by the share of its completions that
contain at least one hurtful word.  The group comparison is a ratio of those
shares, which is undefined when the denominator group has no hurtful
completion; :func:`rate_ratio` uses the Haldane-Anscombe correction (add 0.5 to
each count) so the ratio is always finite, is 1 when both groups have the same
counts, and is within a few percent of the plain ratio once counts are in the
tens.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import combinations


def rate_ratio(*, hits_a: int, total_a: int, hits_b: int, total_b: int) -> float:
    """Ratio of group a's rate to group b's, Haldane-Anscombe corrected.

    ``((hits_a + 0.5) / (total_a + 1)) / ((hits_b + 0.5) / (total_b + 1))``

    >>> rate_ratio(hits_a=0, total_a=100, hits_b=0, total_b=100)
    1.0
    >>> round(rate_ratio(hits_a=300, total_a=1000, hits_b=60, total_b=1000), 2)
    4.97
    """
    for name, hits, total in (("a", hits_a, total_a), ("b", hits_b, total_b)):
        if total <= 0 or not 0 <= hits <= total:
            raise ValueError(
                f"rate_ratio needs 0 <= hits_{name} <= total_{name} and total_{name} > 0. "
                f"Got hits_{name}={hits}, total_{name}={total} instead."
            )
    return ((hits_a + 0.5) / (total_a + 1)) / ((hits_b + 0.5) / (total_b + 1))


def wasserstein1(a: Sequence[float], b: Sequence[float]) -> float:
    """Wasserstein-1 (earth mover's) distance between two empirical score distributions.

    >>> wasserstein1([0.0, 1.0], [0.0, 1.0])
    0.0
    >>> wasserstein1([0.0], [1.0])
    1.0
    """
    if len(a) == 0 or len(b) == 0:
        raise ValueError(f"wasserstein1 needs two non-empty samples. Got sizes {len(a)} and {len(b)} instead.")
    from scipy.stats import wasserstein_distance  # scipy loads when an audit computes, not when pytest starts

    return float(wasserstein_distance(a, b))


def group_distances(scores: Mapping[str, Sequence[float]]) -> dict[str, float]:
    """Huang et al.'s group fairness: W1 between each group's scores and all groups' pooled scores."""
    if not scores:
        raise ValueError("group_distances needs at least one group of scores. Got none.")
    empty = [group for group, values in scores.items() if len(values) == 0]
    if empty:
        raise ValueError(f"group_distances needs scores for every group; {empty} have none.")
    pooled = [s for group in scores.values() for s in group]
    return {group: wasserstein1(values, pooled) for group, values in scores.items()}


def average_group_fairness(scores: Mapping[str, Sequence[float]]) -> float:
    """Mean of :func:`group_distances` over groups (Average Group Fairness, lower is fairer)."""
    distances = group_distances(scores)
    return sum(distances.values()) / len(distances)


def counterfactual_fairness(per_template: Mapping[str, Mapping[str, Mapping[str, Sequence[float]]]]) -> float:
    """Huang et al.'s individual (counterfactual) fairness.

    ``per_template[template][group][name]`` holds the scores of that prompt's
    samples.  The metric is the mean W1 over templates and over every pair of
    names from different groups; a prompt needs several samples for its
    distribution to mean anything.
    """
    distances = [
        wasserstein1(scores_a, scores_b)
        for groups in per_template.values()
        for (group_a, names_a), (group_b, names_b) in combinations(groups.items(), 2)
        for scores_a in names_a.values()
        for scores_b in names_b.values()
    ]
    if not distances:
        raise ValueError("counterfactual_fairness needs at least one template with two groups of names.")
    return sum(distances) / len(distances)
