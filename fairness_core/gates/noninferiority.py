"""Is the candidate no worse than the baseline, by more than a tolerance? Pure statistics of the three verdicts.

The question a release gate asks is one of *non-inferiority*: with ``D`` the
change of a metric's badness (candidate minus baseline, in the metric's own
"worse" direction) and ``tol`` its tolerance,

* **certified** when the data reject ``D >= tol`` at level ``alpha``: the upper end
  of the difference's confidence bound lies below the tolerance;
* **regression** when they reject ``D <= tol``: the lower end lies above it;
* **undecided** otherwise: the run cannot tell, and :func:`needed_fraction`
  estimates how much longer a run it would take to certify an unchanged model.

Each side is a one-sided test at ``alpha`` (the caller divides it among the
gated metrics: Bonferroni, valid under any dependence between them), so a model
exactly at the tolerance is falsely certified with probability <= ``alpha``, and
an unchanged model falsely called a regression with probability <= ``alpha``.

The bound (:func:`radius`) comes in two forms that share the same estimate and
standard error (paired by prompt where both runs asked the same prompts):

* **a single look** (``fraction=None``, the fixed protocol): the normal
  quantile ``z(1 - alpha)`` times the standard error;
* **a confidence sequence** (``fraction`` = the share of the fixed budget seen
  so far, ``--sampling=adaptive``): Robbins' normal-mixture boundary, valid
  *simultaneously* over every look (Howard et al. 2021, eq. (14); its
  asymptotic form for estimates that are only approximately normal is Waudby-Smith
  et al. 2021, "Time-uniform central limit theory"), its mixture tuned to be
  tightest at the full budget, and judging from :data:`BURN_IN` of the budget on.  A run may stop at the first look where every
  gated metric is certified or one is a regression, and the error rates above
  still hold (under the normal approximation of the estimate).

What holds exactly and what is approximate: the boundaries are exact for a
Gaussian estimate with a known standard error; the audit's estimates are
asymptotically normal (pooled rates, log ratios, distances of many completions),
and the standard error is a bootstrap over prompts.  The approximation is
checked where it matters, on simulated runs (``benchmarks/certification.py``,
docs/gate.md): a model exactly at the tolerance, an unchanged model, rare
outcomes.

>>> judge(0.001, 0.05, radius_now=radius(0.004, alpha=0.05))
'certified'
>>> judge(0.2, 0.05, radius_now=radius(0.004, alpha=0.05))
'regression'
>>> judge(0.045, 0.05, radius_now=radius(0.004, alpha=0.05))
'undecided'
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Literal

from scipy.optimize import minimize_scalar
from scipy.stats import norm

Verdict = Literal["certified", "regression", "undecided"]
CERTIFIED: Verdict = "certified"
REGRESSION: Verdict = "regression"
UNDECIDED: Verdict = "undecided"
VERDICTS: tuple[Verdict, ...] = (CERTIFIED, REGRESSION, UNDECIDED)
#: The confidence sequence judges from this share of the budget on.  Its bound is for a normal estimate; at the
#: first samples of rare outcomes (a group with 0 hurtful completions at base rate 0.002) the estimate is far from
#: normal and its bootstrap standard error collapses: simulated same-model pairs were flagged at 1/20 of the budget.
BURN_IN = 0.2


def _check(alpha: float, fraction: float | None) -> None:
    if not 0 < alpha < 1:
        raise ValueError(f"The 'alpha' parameter must be in (0, 1). Got {alpha!r} instead.")
    if fraction is not None and not 0 < fraction:
        raise ValueError(f"The 'fraction' parameter must be > 0 (the share of the budget seen). Got {fraction!r} instead.")


@functools.cache
def mixture_scale(alpha: float) -> float:
    """The normal mixture's spread relative to the budget's variance, chosen so its boundary is tightest at the budget.

    Robbins' boundary at variance ``v`` with mixture parameter ``rho`` is
    ``sqrt((v + rho) (log((v + rho) / rho) + 2 log(1/alpha)))``; with
    ``rho = r v_budget`` its width at the budget relative to the standard error
    is ``sqrt((1 + r) (log(1 + 1/r) + 2 log(1/alpha)))``, minimised over ``r`` here.
    """
    _check(alpha, None)
    found = minimize_scalar(lambda log_r: _width(1.0, math.exp(log_r), alpha), bounds=(-12.0, 4.0), method="bounded")
    return float(math.exp(found.x))


def _width(fraction: float, scale: float, alpha: float) -> float:
    """The mixture boundary at ``fraction`` of the budget, in units of the standard error at that fraction."""
    ratio = scale / fraction
    return math.sqrt((1 + ratio) * (math.log1p(1 / ratio) + 2 * math.log(1 / alpha)))


def radius(standard_error: float, *, alpha: float, fraction: float | None = None) -> float:
    """How far the true difference may lie above (or below) its estimate, one-sided at ``alpha``.

    ``fraction=None``: one look (``z(1 - alpha)`` standard errors).  A fraction
    of the budget: the confidence sequence's radius at that look, valid
    simultaneously over all looks (each side at ``alpha``).

    >>> round(radius(1.0, alpha=0.05), 3)
    1.645
    >>> radius(1.0, alpha=0.05, fraction=1.0) > radius(1.0, alpha=0.05)
    True
    """
    _check(alpha, fraction)
    if standard_error < 0 or math.isnan(standard_error):
        raise ValueError(f"The 'standard_error' parameter must be >= 0. Got {standard_error!r} instead.")
    if fraction is None:
        return float(norm.isf(alpha)) * standard_error
    # The symmetric mixture bounds both sides together at alpha, so each side holds at alpha too.
    return _width(fraction, mixture_scale(alpha), alpha) * standard_error


def judge(difference: float, tolerance: float, *, radius_now: float) -> Verdict:
    """The verdict on a change of badness ``difference`` whose bound is ``difference ± radius_now``."""
    if tolerance < 0:
        raise ValueError(f"The 'tolerance' parameter must be >= 0. Got {tolerance!r} instead.")
    if difference + radius_now < tolerance:
        return CERTIFIED
    if difference - radius_now > tolerance:
        return REGRESSION
    return UNDECIDED


def needed_fraction(standard_error: float, fraction: float, tolerance: float, *, alpha: float,
                    difference: float = 0.0, sequential: bool = True, most: float = 1e4) -> float | None:
    """The share of the fixed budget an unchanged-by-``difference`` model is expected to need to be certified.

    The standard error seen at ``fraction`` of the budget shrinks as
    ``1 / sqrt(share)``; the answer is the smallest share at which
    ``difference + radius < tolerance``, solved on that model (``None`` when
    ``difference >= tolerance``: no amount of data certifies it, or when it
    exceeds ``most`` budgets).  ``sequential`` uses the confidence sequence's
    radius, otherwise a single look's (a fixed run of that size).

    >>> round(needed_fraction(0.01, 1.0, 0.05, alpha=0.05, sequential=False), 3)
    0.108
    """
    _check(alpha, fraction)
    gap = tolerance - difference
    if gap <= 0:
        return None
    if standard_error == 0:
        return 0.0

    def radius_at(share: float) -> float:
        return radius(standard_error * math.sqrt(fraction / share), alpha=alpha,
                      fraction=share if sequential else None)

    if radius_at(most) >= gap:
        return None
    low, high = 0.0, most
    for _ in range(80):
        middle = (low + high) / 2
        low, high = (low, middle) if middle > 0 and radius_at(middle) < gap else (middle, high)
    return high


@dataclass(frozen=True)
class Comparison:
    """One gated metric judged against its baseline: the numbers of the verdict table and the verdict."""

    metric: str
    baseline: float
    candidate: float
    #: The change of badness (candidate minus baseline, worse is positive) and its bound at this look.
    difference: float
    lower: float
    upper: float
    tolerance: float
    verdict: Verdict
    #: How the bound was made: ``paired by prompt`` or ``unpaired``, one look or a confidence sequence.
    method: str
    #: Completions a certification of an unchanged model is expected to need (``None``: none certifies it).
    needed: int | None = None

    def as_dict(self, completions: int | None = None) -> dict:
        """The results file's record (``CertificationRecord``): undefined numbers as ``None``, never NaN."""
        def number(value: float) -> float | None:
            return value if math.isfinite(value) else None

        judged = math.isfinite(self.lower) and math.isfinite(self.upper)
        return {"metric": self.metric, "baseline": number(self.baseline), "candidate": number(self.candidate),
                "difference": number(self.difference), "bound": (self.lower, self.upper) if judged else None,
                "tolerance": self.tolerance, "verdict": self.verdict, "method": self.method,
                "completions": completions, "needed_completions": self.needed}


def compare(metric: str, *, baseline: float, candidate: float, difference: float, standard_error: float,
            tolerance: float, alpha: float, fraction: float | None, method: str,
            completions: int | None = None) -> Comparison:
    """:class:`Comparison` of one metric at ``alpha`` (already divided among the metrics), one look or a sequence.

    ``completions`` is the number the candidate used so far: an undecided
    verdict gets the number :func:`needed_fraction` expects a certification to take.

    >>> c = compare("x", baseline=0.05, candidate=0.051, difference=0.001, standard_error=0.004, tolerance=0.02,
    ...             alpha=0.01, fraction=None, method="paired by prompt")
    >>> c.verdict, round(c.upper, 4)
    ('certified', 0.0103)
    """
    if fraction is not None and fraction < BURN_IN:
        return Comparison(metric, baseline, candidate, difference, -math.inf, math.inf, tolerance, UNDECIDED,
                          f"{method}, not judged before {BURN_IN:g} of the budget (the normal bound's burn-in)")
    width = radius(standard_error, alpha=alpha, fraction=fraction)
    verdict = judge(difference, tolerance, radius_now=width)
    needed = None
    if verdict == UNDECIDED and completions:
        seen = fraction if fraction is not None else 1.0
        share = needed_fraction(standard_error, seen, tolerance, alpha=alpha, difference=max(difference, 0.0),
                                sequential=fraction is not None)
        needed = None if share is None else math.ceil(share / seen * completions)
    look = "one look" if fraction is None else f"confidence sequence at {fraction:.2f} of the budget"
    return Comparison(metric, baseline, candidate, difference, difference - width, difference + width, tolerance,
                      verdict, f"{method}, {look}", needed)
