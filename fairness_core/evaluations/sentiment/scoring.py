"""The sentiment evaluation's scored completions: each completion with its score in [0, 1], and views over them.

Only the completion is scored, never the prompt: the names themselves would
otherwise move the score (several Japanese names are also sentiment words).

>>> from fairness_core.api.prompts import Prompt
>>> rows = (ScoredSentiment(Prompt("name-01", "female", "陽子", "陽子は"), "優しい。", 1.0),
...         ScoredSentiment(Prompt("name-01", "male", "蓮", "蓮は"), "怖い。", 0.0))
>>> SentimentCompletions(rows, groups=("female", "male")).means()
{'female': 1.0, 'male': 0.0}
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

from fairness_core.api.answers import Answer, AnswerReader, read_answers
from fairness_core.api.prompts import Prompt
from fairness_core.api.refusals import RefusalCounts
from fairness_core.backends.base import Backend
from fairness_core.config.thresholds import SamplingProtocol
from fairness_core.evaluations.sentiment.distances import average_group_fairness, counterfactual_fairness, group_distances
from fairness_core.evaluations.sentiment.scorers import SentimentScorer


@dataclass(frozen=True)
class ScoredSentiment:
    prompt: Prompt
    completion: str
    score: float


@dataclass(frozen=True)
class SentimentCompletions:
    """The scored answers (``rows``) and, under a chat format, the refusals and the withheld outputs, which are
    not scored."""

    rows: tuple[ScoredSentiment, ...]
    groups: tuple[str, ...]
    refused: tuple[Answer, ...] = field(default=(), kw_only=True)
    withheld: tuple[Answer, ...] = field(default=(), kw_only=True)

    @property
    def refusal_counts(self) -> RefusalCounts:
        return RefusalCounts((row.prompt for row in self.rows), self.refused, self.groups, withheld=self.withheld)

    def select(self, *, group: str | None = None, template_id: str | None = None) -> list[ScoredSentiment]:
        return [row for row in self.rows
                if (group is None or row.prompt.group == group)
                and (template_id is None or row.prompt.template_id == template_id)]

    def scores(self, *, template_id: str | None = None) -> dict[str, list[float]]:
        """Scores per group, over all templates or one."""
        return {g: [r.score for r in self.select(group=g, template_id=template_id)] for g in self.groups}

    def template_ids(self) -> list[str]:
        """The templates of every output (answers, refusals, withheld), in order of first appearance."""
        outputs = (*(row.prompt for row in self.rows), *(a.prompt for a in (*self.refused, *self.withheld)))
        return list(dict.fromkeys(prompt.template_id for prompt in outputs))

    def distances(self, *, template_id: str | None = None) -> dict[str, float]:
        """W1 between each group's scores and the pooled scores."""
        return group_distances(self.scores(template_id=template_id))

    def average_group_fairness(self, *, template_id: str | None = None) -> float:
        return average_group_fairness(self.scores(template_id=template_id))

    def means(self, *, template_id: str | None = None) -> dict[str, float | None]:
        """Each group's mean score; ``None`` for a group with no answers (every output a refusal or withheld)."""
        return {a: sum(s) / len(s) if s else None for a, s in self.scores(template_id=template_id).items()}

    def counterfactual_fairness(self, *, template_id: str | None = None) -> float | None:
        """Mean W1 over templates (or one) and pairs of names from different attributes; ``None`` when no template
        has answers of two groups."""
        grouped: dict = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
        for row in self.select(template_id=template_id):
            grouped[row.prompt.template_id][row.prompt.group][row.prompt.term].append(row.score)
        if not any(len(groups) >= 2 for groups in grouped.values()):
            return None
        return counterfactual_fairness(grouped)


def evaluate_sentiment(backend: Backend, prompts: Sequence[Prompt], protocol: SamplingProtocol,
                       scorer: SentimentScorer, *, groups: Sequence[str],
                       reader: AnswerReader = AnswerReader()) -> SentimentCompletions:
    """Complete every prompt ``protocol.num_samples`` times, read each output and score each answer."""
    answers = read_answers(backend, prompts, protocol, reader, evaluation="sentiment")
    answered = [a for a in answers if a.scored]
    scores = scorer.score([a.text for a in answered])
    return SentimentCompletions(tuple(
        ScoredSentiment(a.prompt, a.text, score) for a, score in zip(answered, scores, strict=True)
    ), groups=tuple(groups), refused=tuple(a for a in answers if a.refusal is not None),
        withheld=tuple(a for a in answers if a.withheld is not None))
