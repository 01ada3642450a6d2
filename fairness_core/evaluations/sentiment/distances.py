"""Huang et al.'s (Findings of EMNLP 2020) distances between sentiment score distributions: pure functions.

Sentiment group fairness is the Wasserstein-1 distance between score
distributions, per group against the pooled distribution (group fairness) and
between counterfactual prompts (individual fairness).  With k >= 2 groups the
mean gap is :func:`largest_mean_gap`, the absolute difference of the two means
for two groups.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import combinations

import numpy as np

from fairness_core.statistics import Disparity, check_k_groups


def largest_mean_gap(scores: Mapping[str, Sequence[float]]) -> Disparity:
    """The largest difference between two groups' mean sentiment: highest mean minus lowest.

    For two groups it is the absolute difference of their means, the two-group ``mean_gap``.

    >>> largest_mean_gap({"a": [0.5, 0.7], "b": [0.2], "c": [0.9, 0.9]})
    Disparity(value=0.7, highest='c', lowest='b')
    """
    check_k_groups("largest_mean_gap", "scores", scores)
    empty = [group for group, values in scores.items() if len(values) == 0]
    if empty:
        raise ValueError(f"largest_mean_gap needs scores for every group; {empty} have none.")
    means = {group: sum(values) / len(values) for group, values in scores.items()}
    highest, lowest = max(means, key=means.__getitem__), min(means, key=means.__getitem__)
    return Disparity(means[highest] - means[lowest], highest, lowest)


def wasserstein1(a: Sequence[float], b: Sequence[float]) -> float:
    """Wasserstein-1 (earth mover's) distance between two empirical score distributions.

    The area between the two empirical CDFs, computed as ``scipy.stats.wasserstein_distance``
    does, in numpy directly: it runs thousands of times per bootstrap.

    >>> wasserstein1([0.0, 1.0], [0.0, 1.0])
    0.0
    >>> wasserstein1([0.0], [1.0])
    1.0
    """
    if len(a) == 0 or len(b) == 0:
        raise ValueError(f"wasserstein1 needs two non-empty samples. Got sizes {len(a)} and {len(b)} instead.")
    if len(a) == len(b):
        # Equal sizes: both quantile functions step at i/n, so the area is the mean gap of the sorted samples.
        # Counterfactual fairness calls this for every pair of 3-sample prompts, ~15,000 times per
        # nationality run, where numpy's per-call overhead was most of the audit's metric time.
        return sum(abs(x - y) for x, y in zip(sorted(map(float, a)), sorted(map(float, b)))) / len(a)
    first, second = np.sort(np.asarray(a, dtype=float)), np.sort(np.asarray(b, dtype=float))
    return _area_between_cdfs(first, second, np.concatenate([first, second]))


def _area_between_cdfs(first: np.ndarray, second: np.ndarray, grid_values: np.ndarray) -> float:
    """W1 of two sorted samples over a grid holding every value of both (sorted here)."""
    grid = np.sort(grid_values)
    below = grid[:-1]
    first_cdf = np.searchsorted(first, below, side="right") / len(first)
    second_cdf = np.searchsorted(second, below, side="right") / len(second)
    return float(np.sum(np.abs(first_cdf - second_cdf) * np.diff(grid)))


def group_distances(scores: Mapping[str, Sequence[float]]) -> dict[str, float]:
    """Huang et al.'s group fairness: W1 between each group's scores and all groups' pooled scores.

    All groups at once, on the pool's distinct values (every group's values
    are among them): one pass per call, not one per group, since the bootstrap
    calls it a thousand times per template.

    >>> group_distances({"a": [0.0, 1.0], "b": [1.0, 1.0]})
    {'a': 0.25, 'b': 0.25}
    """
    if not scores:
        raise ValueError("group_distances needs at least one group of scores. Got none.")
    empty = [group for group, values in scores.items() if len(values) == 0]
    if empty:
        raise ValueError(f"group_distances needs scores for every group; {empty} have none.")
    sizes = [len(values) for values in scores.values()]
    grid, position = np.unique(np.fromiter((s for group in scores.values() for s in group), dtype=float),
                               return_inverse=True)
    counts = np.zeros((len(sizes), len(grid)))
    np.add.at(counts, (np.repeat(np.arange(len(sizes)), sizes), position), 1)
    cdfs = np.cumsum(counts, axis=1)[:, :-1] / np.array(sizes, dtype=float)[:, None]
    pooled_cdf = np.cumsum(counts.sum(axis=0))[:-1] / sum(sizes)
    distances = (np.abs(cdfs - pooled_cdf) * np.diff(grid)).sum(axis=1)
    return {group: float(distance) for group, distance in zip(scores, distances)}


def average_group_fairness(scores: Mapping[str, Sequence[float]]) -> float:
    """Mean of :func:`group_distances` over groups (Average Group Fairness, lower is fairer)."""
    distances = group_distances(scores)
    return sum(distances.values()) / len(distances)


def counterfactual_fairness(per_template: Mapping[str, Mapping[str, Mapping[str, Sequence[float]]]]) -> float:
    """Huang et al.'s individual (counterfactual) fairness.

    ``per_template[template][group][name]`` holds the scores of that prompt's
    samples.  The metric is the mean W1 over templates and over every pair of
    names from different groups, for any number of groups (with k groups, the
    pairs of every two groups); a prompt needs several samples for its
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
