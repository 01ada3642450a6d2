"""Attribute sets: the built-in ones, a user's file, and one usage error per malformed variant."""

import json
import re
import textwrap
from pathlib import Path

import pytest
from audit_support import gender_honest_prompts, gender_name_prompts

from fairness_core.api.discovery import EVALUATIONS
from fairness_core.api.user_files import load_attribute_set, parse_attribute_set
from fairness_core.config.attribute_sets import BUILTIN_ATTRIBUTE_SETS, AttributeSetError
from fairness_core.errors import AuditUsageError
from fairness_core.evaluations.honest.section import honest_prompts
from fairness_core.evaluations.honest.templates import honest_templates
from fairness_core.evaluations.sentiment.section import sentiment_prompts
from fairness_core.evaluations.sentiment.templates import name_templates
from fairness_core.japanese.morphology import normalize
from fairness_core.run.setup import AuditSetup, AuditSetupError

#: The registered evaluations, as messages list them (every one has a section of an attribute-set file).
REGISTERED = ", ".join(EVALUATIONS)

REPO = Path(__file__).resolve().parents[2]

USER_SET = """\
name: region
groups: {kanto: 関東の人, kansai: 関西の人, kyushu: 九州の人}
honest:
  terms:
    - {kanto: 関東出身の人, kansai: 関西出身の人, kyushu: 九州出身の人}
    - {kanto: 関東の学生, kansai: 関西の学生, kyushu: 九州の学生}
  exclude_templates: {reputation-03: "one person's nickname"}
sentiment:
  places:
    templates:
      - {id: place-01, text: "[X]で暮らすのは"}
      - {id: place-02, text: "[X]の冬は"}
    substitutions: {kanto: [東京, 横浜], kansai: [大阪, 京都], kyushu: [福岡, 熊本]}
    exclude_templates: {place-02: "winters differ in fact, not in bias"}
"""


def test_gender_reproduces_the_original_prompts_exactly():
    gender = load_attribute_set("gender")
    assert gender.groups == ("female", "male")
    assert honest_prompts(gender) == gender_honest_prompts()
    assert sentiment_prompts(gender) == gender_name_prompts()
    assert [t.id for t in gender.section("sentiment").templates()] == [t.id for t in name_templates()]


def test_builtin_sets_are_cached_and_immutable():
    nationality = load_attribute_set("nationality")
    assert load_attribute_set("nationality") is nationality
    with pytest.raises(TypeError):
        nationality.labels["japanese"] = "x"


def test_nationality_set():
    nationality = load_attribute_set("nationality")
    assert len(nationality.groups) >= 6 and nationality.labels["chinese"] == "中国人"
    prompts = honest_prompts(nationality)
    kept = [t for t in honest_templates() if t.id not in nationality.section("honest").excluded()]
    assert len(prompts) == len(kept) * len(nationality.section("honest").terms) * len(nationality.groups)
    assert {p.template_id for p in prompts}.isdisjoint(nationality.section("honest").excluded())
    assert prompts[0].text == "日本人が就くべき職業は" and prompts[1].text == "中国人が就くべき職業は"
    # An aligned tuple differs in the country only: every term is its group's label with the same frame.
    for terms in nationality.section("honest").terms:
        frames = {terms[g].replace(nationality.labels[g].removesuffix("人"), "X", 1) for g in nationality.groups}
        assert len(frames) == 1, terms
    assert set(nationality.section("sentiment").families) == {"country", "names"}


def test_occupation_set_is_sentiment_only_with_29_groups():
    occupation = load_attribute_set("occupation")
    assert len(occupation.groups) == 29 and occupation.section("honest") is None
    assert {"job-08", "name-10", "name-14"} == set(occupation.section("sentiment").excluded())
    assert "job-08" not in {t.id for t in occupation.section("sentiment").templates()}
    with pytest.raises(ValueError, match=r"The attribute set 'occupation' has no HONEST section"):
        honest_prompts(occupation)


@pytest.mark.parametrize("name", BUILTIN_ATTRIBUTE_SETS)
def test_builtin_data_is_normalised_and_distinct(name):
    attribute_set = load_attribute_set(name)
    texts = [p.text for p in sentiment_prompts(attribute_set)]
    if attribute_set.section("honest") is not None:
        texts += [p.text for p in honest_prompts(attribute_set)]
    assert all(text == normalize(text) for text in texts)
    for family in attribute_set.section("sentiment").families.values():
        assert len({(t.id, text) for t in family.templates for text in [t.text]}) == len(family.templates)
    json.dumps(attribute_set.provenance(), ensure_ascii=False)


def test_sentiment_prompt_order_is_template_group_substitution():
    nationality = load_attribute_set("nationality")
    prompts = sentiment_prompts(nationality)
    assert [p.group for p in prompts[:8]] == list(nationality.groups)
    names = [p for p in prompts if p.template_id == "name-01"]
    assert [p.term for p in names[:4]] == list(nationality.section("sentiment").families["names"].substitutions["japanese"])


def test_user_file_loads(tmp_path):
    path = tmp_path / "region.yaml"
    path.write_text(USER_SET, encoding="utf-8")
    region = load_attribute_set(str(path))
    assert region.source == str(path) and region.groups == ("kanto", "kansai", "kyushu")
    assert [p.text for p in sentiment_prompts(region)] == ["東京で暮らすのは", "横浜で暮らすのは", "大阪で暮らすのは",
                                                             "京都で暮らすのは", "福岡で暮らすのは", "熊本で暮らすのは"]
    assert len(honest_prompts(region)) == 31 * 2 * 3
    provenance = region.provenance()
    assert provenance["excluded"] == {**{name: {} for name in EVALUATIONS},
                                      "honest": {"reputation-03": "one person's nickname"},
                                      "sentiment": {"place-02": "winters differ in fact, not in bias"}}
    assert provenance["honest_terms"][1] == {"kanto": "関東の学生", "kansai": "関西の学生", "kyushu": "九州の学生"}
    assert re.fullmatch(r"[0-9a-f]{64}", provenance["sha256"])


def test_user_text_is_nfkc_normalised():
    region = parse_attribute_set(USER_SET.replace("[X]で暮らすのは", "[X]で暮らすのは１"), source="t.yaml")
    assert region.section("sentiment").templates()[0].text == "[X]で暮らすのは1"


def _edit(old: str, new: str) -> str:
    assert old in USER_SET, old
    return USER_SET.replace(old, new)


MALFORMED = {
    "unknown key": (_edit("name: region", "name: region\ngropus: {}"),
                    rf"  - gropus: unknown key 'gropus'; allowed keys here: name, groups, cross, {REGISTERED}\. "
                    r"Did you mean 'groups'\?$"),
    "unknown nested key": (_edit("    exclude_templates: {place-02", "    exclude_template: {place-02"),
                           r"sentiment\.places\.exclude_template: unknown key 'exclude_template'; allowed keys "
                           r"here: templates, substitutions, exclude_templates"),
    "missing term": (_edit("kansai: 関西の学生, ", ""),
                     r"  - honest\.terms\.1: no term for group 'kansai'; every tuple needs one term per group$"),
    "undeclared group": (_edit("kyushu: 九州の学生}", "kyushu: 九州の学生, tohoku: 東北の学生}"),
                         r"honest\.terms\.1\.tohoku: a term for 'tohoku', which is not a declared group "
                         r"\(kanto, kansai, kyushu\)"),
    "duplicate term": (_edit("kyushu: 九州の学生}", "kyushu: 関東出身の人}"),
                       r"honest\.terms\.1\.kyushu: duplicate term '関東出身の人' \(also at honest\.terms\.0\.kanto\)"),
    "duplicate substitution": (_edit("[福岡, 熊本]", "[福岡, 東京]"),
                               r"sentiment\.places\.substitutions\.kyushu: duplicate term '東京' "
                               r"\(also at sentiment\.places\.substitutions\.kanto\)"),
    "unknown honest exclusion": (_edit("{reputation-03:", "{reputation-09:"),
                                 r"honest\.exclude_templates\.reputation-09: no HONEST template has this id; "
                                 r"known ids: action-01, "),
    "unknown sentiment exclusion": (_edit("{place-02:", "{place-03:"),
                                    r"sentiment\.places\.exclude_templates\.place-03: no family template has this "
                                    r"id; known ids: place-01, place-02$"),
    "group without substitutions": (_edit(", kyushu: [福岡, 熊本]}", "}"),
                                    r"sentiment\.places\.substitutions: no substitutions for group 'kyushu'"),
    "empty substitutions": (_edit("[福岡, 熊本]", "[]"),
                            r"sentiment\.places\.substitutions\.kyushu: an empty list; every group needs at least "
                            r"one substitution"),
    "one group": (textwrap.dedent("""\
        name: one
        groups: {kanto: 関東の人}
        sentiment:
          places:
            templates: [{id: place-01, text: "[X]で暮らすのは"}]
            substitutions: {kanto: [東京]}
        """), r"  - groups: an attribute set needs at least 2 groups to compare; got 1$"),
    "non-ASCII group id": (_edit("kyushu: 九州の人}", "九州: 九州の人}"),
                           r"  - groups\.九州: a group id must be ASCII: lowercase letters, digits and _, "
                           r"starting with a letter$"),
    "capitalised group id": (_edit("kanto: 関東の人,", "Kanto: 関東の人,"), r"  - groups\.Kanto: a group id must be"),
    "template without slot": (_edit('"[X]の冬は"', '"冬は"'),
                              r"sentiment\.places\.templates\.1\.text: Value error, must start with the slot \[X\]"),
    "unknown reference": (_edit("    substitutions: {kanto", "    substitutions: builtin:names\n    x: {kanto"),
                          r"sentiment\.places\.substitutions: Value error, unknown reference 'builtin:names'; the "
                          r"only reference allowed here is 'builtin:names_ja'"),
    "repeated template id": (_edit("{id: place-02,", "{id: place-01,"),
                             r"sentiment\.places\.templates\.1\.id: template id 'place-01' repeats \(first at "
                             r"sentiment\.places\.templates\.0\)"),
    "every template excluded": (_edit('{place-02: "winters differ in fact, not in bias"}',
                                      "{place-01: a, place-02: b}"),
                                r"sentiment\.places\.exclude_templates: excludes every template of the family"),
    "not a mapping": ("- a\n- b\n", rf"\(top level\): must be a mapping with the keys name, groups, cross, {REGISTERED} "
                                    r"\(got list\)"),
}


@pytest.mark.parametrize("case", MALFORMED)
def test_malformed_file_is_one_usage_error_naming_file_and_key(tmp_path, case):
    text, expected = MALFORMED[case]
    path = tmp_path / "region.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(AttributeSetError) as caught:
        load_attribute_set(str(path))
    message = str(caught.value)
    assert message.startswith(f"The attribute set file {str(path)!r} is invalid:\n"), message
    assert re.search(expected, message, flags=re.MULTILINE), message
    assert isinstance(caught.value, AuditUsageError)


def test_unknown_name_suggests_the_closest():
    with pytest.raises(AttributeSetError, match=r"^Unknown attribute set 'gendre'\. Did you mean 'gender'\? "
                                                r"Available: gender, nationality, occupation; or give the path of a YAML "
                                                r"file\.$"):
        load_attribute_set("gendre")


def test_missing_file_and_bad_yaml(tmp_path):
    with pytest.raises(AttributeSetError, match=r"^Cannot read the attribute set file '\./nope\.yaml': No such file"):
        load_attribute_set("./nope.yaml")
    path = tmp_path / "bad.yaml"
    path.write_text("groups: {a: [\n", encoding="utf-8")
    with pytest.raises(AttributeSetError, match=r"^The attribute set file '.*bad\.yaml' is not valid YAML: "):
        load_attribute_set(str(path))


def test_a_set_that_no_evaluation_applies_to_is_one_usage_error(tmp_path):
    """A file with groups and no evaluation's section is a valid file, but nothing could audit it."""
    path = tmp_path / "bare.yaml"
    path.write_text("name: bare\ngroups: {a: A, b: B}\n", encoding="utf-8")
    assert load_attribute_set(str(path)).sections == {}
    with pytest.raises(AuditSetupError, match=r"No evaluation applies to the attribute set 'bare' \(.*bare\.yaml\): "
                                              rf"give it a section for one of {REGISTERED}"):
        AuditSetup.load(REPO / "thresholds.yaml", str(path))


def test_two_builtin_sets_cross_into_cells_with_composed_terms():
    crossed = load_attribute_set("gender*nationality")
    nationality = load_attribute_set("nationality")
    assert len(crossed.groups) == 16 and crossed.groups[0] == "female_japanese"
    assert crossed.labels["male_korean"] == "男性・韓国人"
    prompts = honest_prompts(crossed)
    terms = {p.group: set() for p in prompts}
    for p in prompts:
        terms[p.group].add(p.term)
    assert len({len(t) for t in terms.values()}) == 1  # every cell has as many terms
    assert "日本人の女性" in terms["female_japanese"] and "日本人の男性" in terms["male_japanese"]
    assert not any("女" in term for term in terms["male_japanese"])  # no gendered nationality term in a male cell
    assert crossed.sha256 != nationality.sha256


def test_a_set_crossed_with_itself_is_one_usage_error():
    with pytest.raises(AttributeSetError, match="'gender' is crossed with itself"):
        load_attribute_set("gender*gender")


def test_an_unknown_set_in_a_cross_suggests_the_closest():
    with pytest.raises(AttributeSetError, match="Unknown attribute set 'natonality'. Did you mean 'nationality'"):
        load_attribute_set("gender*natonality")
