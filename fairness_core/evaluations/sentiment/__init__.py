"""Group fairness through sentiment (Huang et al., Findings of EMNLP 2020), adapted to Japanese.

Completions after each group's names or words are scored by a sentiment
scorer; the audit compares the score distributions (Wasserstein-1 to the
pooled scores, mean gaps, counterfactual fairness).  Everything it needs is in
this folder: the evaluation class (``evaluation.py``, registered as the
``sentiment`` entry point), its sections, templates and names (``data/``), the
scorers, the metrics, the evidence, the plot, the gate simulation and the
audit tests.
"""
