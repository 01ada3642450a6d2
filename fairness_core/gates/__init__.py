"""The two gates a model passes: the deploy gate (the limits, with measured error rates) and the regression gate.

:mod:`~fairness_core.gates.deploy` says what the limits of ``thresholds.yaml``
can detect and how often they block a fair model;
:mod:`~fairness_core.gates.regression` compares a run with a ``--baseline``;
:mod:`~fairness_core.gates.simulation` holds the terms that the gate simulation
shares with each evaluation's stand-in runs.
"""
