"""The audit tests, shipped with the package: ``pytest --pyargs fairness_core.audits --model=M``.

Collecting this folder collects the audit tests of every registered
evaluation (each keeps them in its own package, ``test_<name>.py``; see
:class:`fairness_core.pytest_plugin.AuditsDirectory`) and the regression tests
here.  Each module marks itself ``fairness_audit(<evaluation>)``; the plugin
parametrizes its tests from the thresholds file and the attribute set
(``group``, ``template_id``, ``category``, ``metric``) and hands them the run's
session as the ``audit`` fixture.  The tests only look results up and call
``audit.check``: nothing is generated per test.
"""
