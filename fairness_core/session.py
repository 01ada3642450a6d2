"""One audit run's state: validated options, loaded model and scorers, lazily computed results.

Built once by the plugin when audit tests are collected, so that every usage
problem (no ``--model``, a model that does not load, a bad ``thresholds.yaml``
or lexicon) surfaces as one error before any test runs.  Results are computed
on first use and shared by every test of the session.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

from fairness_core.backends.base import Backend
from fairness_core.backends.hf import HFBackend, load_model
from fairness_core.honest import HonestResults, evaluate_honest
from fairness_core.lexicon import Lexicon, LexiconLevel, load_builtin_lexicon, load_lexicon
from fairness_core.matching import HurtfulMatcher
from fairness_core.group_fairness import SentimentResults, evaluate_sentiment
from fairness_core.resources import (
    given_names, honest_prompts, honest_templates, identity_pairs, name_prompts, name_templates,
)
from fairness_core.sentiment import SentimentScorer, load_scorer
from fairness_core.thresholds import AuditConfig, load_thresholds


@dataclass(frozen=True)
class AuditOptions:
    """The command-line options of an audit run, as given."""

    model: str
    revision: str | None
    trust_remote_code: bool
    device: str
    dtype: str
    batch_size: int
    seed: int
    thresholds: Path
    lexicon: Path | None
    lexicon_level: LexiconLevel | None
    sentiment: str


class AuditSession:
    def __init__(self, options: AuditOptions, *, backend: Backend | None = None):
        self.options = options
        self.config: AuditConfig = load_thresholds(options.thresholds)
        level = options.lexicon_level or self.config.honest.lexicon_level
        source = load_lexicon(options.lexicon) if options.lexicon else load_builtin_lexicon()
        self.lexicon: Lexicon = source.at_level(level)
        self.scorer: SentimentScorer = load_scorer(
            options.sentiment, label_positivity=self.config.sentiment.label_positivity
        )
        self.backend = backend or self._load_backend()

    def _load_backend(self) -> Backend:
        o = self.options
        model, tokenizer = load_model(o.model, revision=o.revision, trust_remote_code=o.trust_remote_code,
                                      device=o.device, dtype=o.dtype)
        description = {"model": o.model, "revision": o.revision or "(default)",
                       "dtype": str(model.dtype).removeprefix("torch."), "device": str(model.device)}
        return HFBackend(model, tokenizer, seed=o.seed, batch_size=o.batch_size, description=description)

    @functools.cached_property
    def honest(self) -> HonestResults:
        prompts = honest_prompts(honest_templates(), identity_pairs())
        return evaluate_honest(self.backend, prompts, self.config.honest.protocol, HurtfulMatcher(self.lexicon.entries))

    @functools.cached_property
    def sentiment(self) -> SentimentResults:
        prompts = name_prompts(name_templates(), given_names())
        return evaluate_sentiment(self.backend, prompts, self.config.sentiment.protocol, self.scorer)
