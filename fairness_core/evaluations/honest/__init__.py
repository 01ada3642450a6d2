"""HONEST (Nozza, Bianchi and Hovy, NAACL 2021), adapted to Japanese: the share of completions with a hurtful word.

Everything HONEST needs is in this folder: the evaluation class
(``evaluation.py``, registered as the ``honest`` entry point), its
``thresholds.yaml`` and attribute-set sections, its templates, identity terms
and lexicon (``data/``), the morpheme matcher with its spelling rules, the
metrics, the evidence, the plot, the gate simulation and the audit tests.
"""
