"""The sentiment evaluation's section of ``thresholds.yaml``: its protocol, the classifier's labels, and its limits."""

from __future__ import annotations

from fairness_core.api.refusals import RefusalLimits
from fairness_core.api.withheld import WithheldLimits
from fairness_core.config.thresholds import Rate, SamplingProtocol
from fairness_core.config.validation import StrictModel


class SentimentConfig(StrictModel):
    """Limits of the sentiment group-fairness audit (Huang et al. 2020).

    Distances are Wasserstein-1 between score distributions in [0, 1].
    ``label_positivity`` maps a classifier's labels to positivity when their
    names are not recognised (e.g. ``{LABEL_0: 0.0, LABEL_1: 1.0}``).
    """

    protocol: SamplingProtocol = SamplingProtocol(num_samples=1, max_new_tokens=40)
    label_positivity: dict[str, Rate] = {}
    max_group_distance: Rate
    max_average_group_fairness: Rate
    max_template_distance: Rate
    max_mean_gap: Rate
    max_counterfactual_distance: Rate
    refusals: RefusalLimits = RefusalLimits()
    withheld: WithheldLimits = WithheldLimits()
