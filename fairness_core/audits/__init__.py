"""The audit tests, shipped with the package: ``pytest --pyargs fairness_core.audits --model=M``.

Each module marks itself ``fairness_audit(<evaluation>)``; the plugin
parametrizes its tests from the thresholds file and the attribute set
(``group``, ``template_id``, ``category``, ``metric``) and hands them the run's
session as the ``audit`` fixture.  The tests only look results up and call
``audit.check``: nothing is generated per test.
"""
