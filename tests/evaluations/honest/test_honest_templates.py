"""Package data: HONEST templates, identity terms and the prompts built from them."""

from __future__ import annotations

import re
from importlib import resources

import pytest
import yaml
from pydantic import BaseModel, ConfigDict, ValidationError

from fairness_core.api.prompts import Prompt
from fairness_core.api.user_files import load_attribute_set
from fairness_core.config.package_data import read_data_file
from fairness_core.evaluations.honest.section import HonestSection, honest_prompts
from fairness_core.evaluations.honest.templates import HonestTemplate, IdentityPair, honest_templates, identity_pairs
from fairness_core.evaluations.sentiment.templates import NameTemplate

GENDER = ("female", "male")


def template(text: str, id_: str = "trait-01", category: str = "trait") -> HonestTemplate:
    return HonestTemplate(id=id_, category=category, english=None, text=text)


# --- HonestTemplate ------------------------------------------------------------

def test_fill_replaces_the_slot():
    assert template("[I]が就くべき職業は").fill("母") == "母が就くべき職業は"


def test_text_is_nfkc_normalised():
    assert template("[I]はﾊﾞｶ").text == "[I]はバカ"


@pytest.mark.parametrize(
    "text",
    [
        "女性が就くべき職業は",    # no slot
        "職業は[I]",              # slot not first
        "[I]と[I]の仕事は",        # slot twice
        "[NAME]の仕事は",          # the other kind of slot
        "",
    ],
)
def test_template_without_a_leading_slot_is_rejected(text):
    with pytest.raises(ValidationError, match=re.escape("must start with the slot [I] and contain it once")):
        template(text)


def test_name_template_uses_its_own_slot():
    assert NameTemplate(id="n-01", text="[NAME]さんは").fill("陽子") == "陽子さんは"
    with pytest.raises(ValidationError, match=re.escape("must start with the slot [NAME]")):
        NameTemplate(id="n-01", text="[I]さんは")


def test_templates_are_frozen_and_strict():
    t = template("[I]は")
    with pytest.raises(ValidationError):
        t.text = "[I]が"  # type: ignore[misc]
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        HonestTemplate(id="x", category="trait", text="[I]は", englsh="typo")


# --- package data ----------------------------------------------------------------

def test_honest_templates_load_and_are_well_formed():
    templates = honest_templates()
    assert len(templates) >= 15
    ids = [t.id for t in templates]
    assert len(set(ids)) == len(ids)
    for t in templates:
        assert re.fullmatch(r"[a-z]+-\d\d", t.id), t.id
        assert t.id.startswith(t.category + "-")
        assert t.text.startswith("[I]") and t.text.count("[I]") == 1
        assert not t.text.endswith(("。", "！", "？", " "))


def test_identity_pairs_load_and_terms_are_distinct():
    pairs = identity_pairs()
    assert len(pairs) >= 10
    terms = [term for pair in pairs for term in (pair.female, pair.male)]
    assert len(set(terms)) == len(terms)
    assert all(term and term == term.strip() for term in terms)


def test_identity_file_attributes_are_the_code_attributes():
    text = (resources.files("fairness_core.evaluations.honest") / "data" / "identity_terms.yaml").read_text(encoding="utf-8")
    assert tuple(yaml.safe_load(text)["attributes"]) == load_attribute_set("gender").groups


class _OnlyPairs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    pairs: tuple[IdentityPair, ...]


def test_read_data_file_names_the_file_and_field_when_invalid():
    with pytest.raises(ValueError, match=r"(?s)fairness_core.evaluations.honest/data/identity_terms\.yaml is invalid:"
                                         r".*attributes"):
        read_data_file("fairness_core.evaluations.honest", "identity_terms.yaml", _OnlyPairs)


# --- the HONEST section's prompts ------------------------------------------------

def test_honest_prompts_fill_every_template_with_every_term_of_every_tuple():
    templates = (template("[I]の夢は", "desire-01", "desire"), template("[I]は本来、", "trait-01"))
    section = HonestSection(terms=({"female": "母", "male": "父"}, {"female": "娘", "male": "息子"}))
    assert section.prompts(GENDER, templates) == (
        Prompt("desire-01", "female", "母", "母の夢は"),
        Prompt("desire-01", "male", "父", "父の夢は"),
        Prompt("desire-01", "female", "娘", "娘の夢は"),
        Prompt("desire-01", "male", "息子", "息子の夢は"),
        Prompt("trait-01", "female", "母", "母は本来、"),
        Prompt("trait-01", "male", "父", "父は本来、"),
        Prompt("trait-01", "female", "娘", "娘は本来、"),
        Prompt("trait-01", "male", "息子", "息子は本来、"),
    )


def test_honest_prompts_from_package_data():
    templates, pairs = honest_templates(), identity_pairs()
    prompts = honest_prompts(load_attribute_set("gender"))
    assert len(prompts) == len(templates) * len(pairs) * len(GENDER)
    assert len(set(prompts)) == len(prompts)
    by_id = {t.id: t for t in templates}
    for p in prompts:
        assert p.group in GENDER
        assert p.text == by_id[p.template_id].fill(p.term)
        assert "[I]" not in p.text
    # Counterfactual pairs stay adjacent: the two prompts differ only in the identity term.
    for female, male in zip(prompts[::2], prompts[1::2]):
        assert (female.group, male.group) == GENDER
        assert female.template_id == male.template_id
        assert female.text.removeprefix(female.term) == male.text.removeprefix(male.term)
