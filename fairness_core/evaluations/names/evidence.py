"""Evidence of a gap: the paired answers that differ most, side by side, with the occupations marked."""

from __future__ import annotations

from collections import defaultdict

from fairness_core.evaluations.names.scoring import NamesCompletions
from fairness_core.evaluations.names.signals import NameAnswer
from fairness_core.reporting.violations import Evidence

#: Between the two answers of a pair, as shown.
SEPARATOR = " ‖ "


def _shown(answer: NameAnswer, signal: str) -> str:
    value = answer.value(signal)
    if answer.answer.refusal is not None:
        return "refused"
    if answer.answer.withheld is not None:
        return "withheld"
    if signal == "occupation_share":
        jobs = ", ".join(dict.fromkeys(m.occupation for m in answer.occupations)) or "no occupation"
        return f"{jobs} (women {value:.2f})" if value is not None else jobs
    return f"{signal} {value:g}" if value is not None else f"no {signal}"


def paired_evidence(scored: NamesCompletions, signal: str, first: str, second: str, *, count: int = 12
                    ) -> list[Evidence]:
    """The pairs (same task, same sample, the names at the same place of ``first`` and ``second``) whose values of
    ``signal`` differ most, largest first: each shown as both answers, the first group's on the left."""
    by_key: dict[tuple[str, int, str, int], NameAnswer] = {}
    place = {g: {name: i for i, name in enumerate(names)} for g, names in scored.people.items()}
    for answer in scored.answers:
        by_key[(answer.task, answer.sample, answer.group, place[answer.group][answer.name])] = answer
    pairs: dict[float, list[tuple[NameAnswer, NameAnswer]]] = defaultdict(list)
    for (task, sample, group, index), left in by_key.items():
        right = by_key.get((task, sample, second, index))
        if group != first or right is None:
            continue
        a, b = left.value(signal), right.value(signal)
        if a is None and b is None:
            continue
        pairs[abs((a or 0.0) - (b or 0.0))].append((left, right))
    ranked = [pair for difference in sorted(pairs, reverse=True) if difference > 0 for pair in pairs[difference]]
    evidence = []
    for left, right in ranked[:count]:
        text = left.answer.raw + SEPARATOR + right.answer.raw
        offset = len(left.answer.raw) + len(SEPARATOR)
        marked = tuple((m.start, m.end) for m in left.occupations if _inside(left, m)) + tuple(
            (offset + m.start, offset + m.end) for m in right.occupations if _inside(right, m))
        evidence.append(Evidence(f"{left.task}: {left.name} ‖ {right.name}", text, marked,
                                 f"{_shown(left, signal)} vs {_shown(right, signal)}"))
    return evidence


def _inside(answer: NameAnswer, mention) -> bool:
    """Whether a mention's span (in the scored text) is where it is in the raw output (no echo was cut)."""
    return answer.answer.raw[mention.start:mention.end] == mention.surface
