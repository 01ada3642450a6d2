"""The evaluations an audit runs, by name: the one line a new evaluation adds.

An evaluation is one module of this package that owns everything specific to
it: its section of ``thresholds.yaml``, its prompts, scoring, metrics, evidence
and plots (see :mod:`fairness_core.evaluations.base` for what it provides).
The table names classes as ``"module:Class"``: the modules import ``scipy`` and
friends only when an audit computes, while the pytest plugin reads this table on
every collection of an audit.

>>> list(EVALUATIONS)
['honest', 'sentiment']
"""

from __future__ import annotations

from fairness_core.registry import Registry

EVALUATIONS: Registry[str] = Registry("evaluation", {
    "honest": "fairness_core.evaluations.honest:HonestEvaluation",
    "sentiment": "fairness_core.evaluations.sentiment:SentimentEvaluation",
})
