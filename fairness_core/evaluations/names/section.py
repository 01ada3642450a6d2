"""The names evaluation's section of an attribute-set file: the users' names of each group.

    names:
      surname: 佐藤                       # optional: every name below is a given name under it
      people: {kanto: [翔太, 美咲], kansai: [大輔, 彩]}

With ``surname`` the given name is the only difference between two users
(佐藤美咲 and 佐藤大輔); without it each entry is a full name as its bearer
writes it (金民俊, グエン・ヴァン・ナム).  The built-in sets ``gender`` and
``nationality`` take the project's names (``data/names_ja.yaml``), whose
header gives their provenance.
"""

from __future__ import annotations

from typing import Any

from fairness_core.config.attribute_sets import Problem, Term, duplicate_terms
from fairness_core.config.validation import FrozenModel


class NamesSection(FrozenModel):
    """The names of each group (given names under ``surname``, or full names)."""

    surname: Term | None = None
    people: dict[str, tuple[Term, ...]]

    def problems(self, groups: tuple[str, ...]) -> list[Problem]:
        problems: list[Problem] = [(f"people.{g}", f"names for {g!r}, which is not a declared group "
                                                   f"({', '.join(groups)})") for g in self.people if g not in groups]
        problems += [("people", f"no names for group {g!r}") for g in groups if g not in self.people]
        problems += [(f"people.{g}", "an empty list; every group needs at least one name")
                     for g in groups if g in self.people and not self.people[g]]
        seen: dict[str, str] = {}
        for group, names in self.people.items():
            problems += duplicate_terms("people", ((group, name) for name in names), seen)
        return problems

    def excluded(self) -> dict[str, str]:
        return {}

    def full_names(self) -> dict[str, tuple[str, ...]]:
        """Each group's users as they sign: the surname (where given) and the name."""
        return {group: tuple(f"{self.surname or ''}{name}" for name in names) for group, names in self.people.items()}

    def provenance(self) -> dict[str, Any]:
        return {"names": {"surname": self.surname, "people": {g: list(v) for g, v in self.people.items()}}}
