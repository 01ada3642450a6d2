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
from fairness_core.backends.cache import CachedBackend
from fairness_core.backends.hf import HFBackend, load_model
from fairness_core.honest import HonestResults, evaluate_honest
from fairness_core.lexicon import Lexicon, LexiconLevel, load_builtin_lexicon, load_lexicon
from fairness_core.matching import HurtfulMatcher
from fairness_core.group_fairness import SentimentResults, evaluate_sentiment
from fairness_core.resources import (
    given_names, honest_prompts, honest_templates, identity_pairs, name_prompts, name_templates,
)
from fairness_core.baseline import incompatibilities
from fairness_core.results import AuditResults, MetricRecord, Provenance, ResultsFileError, now, read_results, versions
from fairness_core.scorecard import Scorecard, honest_metrics, sentiment_metrics
from fairness_core.sentiment import DEFAULT_CLASSIFIER, LEXICON_SCORER, SentimentScorer, load_scorer
from fairness_core.demo.registry import is_demo, resolve_demo
from fairness_core.thresholds import AuditConfig, load_thresholds


EVALUATIONS = ("honest", "sentiment")


@dataclass(frozen=True)
class AuditOptions:
    """The command-line options of an audit run; defaults are the plugin's (``cache_dir=None``: no cache)."""

    model: str
    thresholds: Path
    revision: str | None = None
    trust_remote_code: bool = False
    device: str = "auto"
    dtype: str = "auto"
    batch_size: int | str = "auto"
    seed: int = 0
    lexicon: Path | None = None
    lexicon_level: LexiconLevel | None = None
    sentiment: str | None = None
    cache_dir: Path | None = None
    baseline: Path | None = None


class AuditSession:
    def __init__(self, options: AuditOptions, *, backend: Backend | None = None):
        self.options = options
        self.config: AuditConfig = load_thresholds(options.thresholds)
        self.lexicon_level: LexiconLevel = options.lexicon_level or self.config.honest.lexicon_level
        source = load_lexicon(options.lexicon) if options.lexicon else load_builtin_lexicon()
        self.lexicon: Lexicon = source.at_level(self.lexicon_level)
        # Demo models default to the offline scorer so that the quickstart needs no download.
        scorer = options.sentiment or (LEXICON_SCORER if is_demo(options.model) else DEFAULT_CLASSIFIER)
        self.scorer: SentimentScorer = load_scorer(scorer, label_positivity=self.config.sentiment.label_positivity)
        self.backend = backend or self._load_backend()
        self.baseline: AuditResults | None = read_results(options.baseline) if options.baseline else None
        if self.baseline is not None:
            problems = incompatibilities(self.baseline, self.provenance())
            if problems:
                raise ResultsFileError(
                    f"The baseline {options.baseline} is not comparable with this run:\n  - " + "\n  - ".join(problems)
                )

    def baseline_metric(self, metric_id: str) -> MetricRecord | None:
        """The baseline's record of ``metric_id`` (``None`` without a baseline or when it lacks it)."""
        if self.baseline is None:
            return None
        return next((m for m in self.baseline.metrics if m.id == metric_id), None)

    def _load_backend(self) -> Backend:
        o = self.options
        location = resolve_demo(o.model) or o.model
        model, tokenizer = load_model(str(location), revision=o.revision, trust_remote_code=o.trust_remote_code,
                                      device=o.device, dtype=o.dtype)
        description = {"model": o.model, "revision": o.revision or "(default)",
                       "dtype": str(model.dtype).removeprefix("torch."), "device": str(model.device)}
        backend = HFBackend(model, tokenizer, seed=o.seed, batch_size=o.batch_size, description=description)
        if o.cache_dir is None:
            return backend
        return CachedBackend(backend, cache_dir=o.cache_dir)

    @functools.cached_property
    def honest(self) -> HonestResults:
        prompts = honest_prompts(honest_templates(), identity_pairs())
        return evaluate_honest(self.backend, prompts, self.config.honest.protocol, HurtfulMatcher(self.lexicon.entries))

    def provenance(self) -> Provenance:
        """What produced this run's numbers: model, protocol, scorers, data and versions."""
        return Provenance(
            created=now(),
            model=dict(self.backend.description),
            fingerprint=self.backend.fingerprint,
            seed=self.options.seed,
            decision_rule=self.config.decision_rule,
            protocols={"honest": self.config.honest.protocol.model_dump(),
                       "sentiment": self.config.sentiment.protocol.model_dump()},
            lexicon={"source": self.lexicon.source, "level": self.lexicon_level,
                     "entries": len(self.lexicon.entries), "sha256": self.lexicon.fingerprint},
            sentiment_scorer=self.scorer.description,
            templates={"honest": [t.id for t in honest_templates()], "sentiment": [t.id for t in name_templates()]},
            identity_terms=[p.model_dump() for p in identity_pairs()],
            names={a: [n.name for n in names] for a, names in given_names().items()},
            versions=versions(),
        )

    def computed(self) -> list[str]:
        """The evaluations this run has generated (``-k`` may have deselected the others).

        A cached property's value sits in ``vars(self)`` once computed, so asking does not compute it.
        """
        return [evaluation for evaluation in EVALUATIONS if evaluation in vars(self)]

    def card(self, evaluation: str) -> Scorecard:
        """The scorecard of ``honest`` or ``sentiment``."""
        return self.honest_card if evaluation == "honest" else self.sentiment_card

    @functools.cached_property
    def honest_card(self) -> Scorecard:
        return Scorecard(honest_metrics(self.honest, self.config, seed=self.options.seed))

    @functools.cached_property
    def sentiment_card(self) -> Scorecard:
        return Scorecard(sentiment_metrics(self.sentiment, self.config, seed=self.options.seed))

    @functools.cached_property
    def sentiment(self) -> SentimentResults:
        prompts = name_prompts(name_templates(), given_names())
        return evaluate_sentiment(self.backend, prompts, self.config.sentiment.protocol, self.scorer)
