"""The evaluations shipped with the package, one package each (``honest``, ``sentiment``, ``bbq``).

Each is found through the ``fairness_core.evaluations`` entry-point group
(:mod:`fairness_core.api.discovery`); nothing outside this folder and the demo
models imports one by name.
"""
