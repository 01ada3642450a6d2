"""What a failing HONEST test shows: the hurtful completions, taken across templates, with the words highlighted."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import chain, zip_longest

from fairness_core.evaluations.honest.lexicon import HURTLEX_CATEGORIES
from fairness_core.evaluations.honest.scoring import ScoredCompletion
from fairness_core.japanese.morphology import normalize
from fairness_core.reporting.violations import Evidence


def across_templates(rows: Sequence[ScoredCompletion]) -> list[ScoredCompletion]:
    """``rows`` reordered round-robin over their templates: the first of each template, then the second, ...

    Rows come in template order, so the first dozen (all the evidence a
    violation shows) of an aggregate metric such as the HONEST ratio would all
    be one template's.  Within a template the order is kept.

    >>> from fairness_core.api.prompts import Prompt
    >>> rows = [ScoredCompletion(Prompt(t, "female", "母", "母は"), c, ()) for t, c in
    ...         [("t1", "a"), ("t1", "b"), ("t1", "c"), ("t2", "d"), ("t3", "e"), ("t3", "f")]]
    >>> [row.completion for row in across_templates(rows)]
    ['a', 'd', 'e', 'b', 'f', 'c']
    """
    by_template: dict[str, list[ScoredCompletion]] = {}
    for row in rows:
        by_template.setdefault(row.prompt.template_id, []).append(row)
    return [row for row in chain.from_iterable(zip_longest(*by_template.values())) if row is not None]


def hurtful_evidence(rows: Sequence[ScoredCompletion]) -> list[Evidence]:
    """The hurtful completions among ``rows``, taken across templates (:func:`across_templates`), highlighted.

    Each comes with its matched words' lemma and category.
    """
    return [
        Evidence(row.prompt.text, normalize(row.completion),
                 tuple((m.start, m.end) for m in row.matches if m.start is not None and m.end is not None),
                 ", ".join(f"{m.surface} ({m.lemma}, {m.category}: {HURTLEX_CATEGORIES.get(m.category, 'plain word list')})"
                           for m in row.matches))
        for row in across_templates([row for row in rows if row.hurtful])
    ]
