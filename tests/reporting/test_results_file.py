"""``--audit-json``: the machine-readable results, their committed JSON Schema and reading them back.

The schema file is golden: it must equal what the pydantic model generates, so
a change of the results format cannot slip in without a new schema (and, when
readers would break, a new ``SCHEMA_VERSION``).  The end-to-end test runs the
real audit modules on the tiny SentencePiece GPT-2 and checks that every number
in the file can be traced back to the completions it was computed from.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import jsonschema
import pytest
from audit_support import (
    GATED_METRICS,
    IDENTITY_WORDS,
    TINY_PROTOCOL,
    minimal_results,
    output,
    run_audit,
    setup_audits,
    thresholds,
)

from fairness_core.api.discovery import discover
from fairness_core.api.user_files import validate_config
from fairness_core.evaluations.honest.lexicon import HURTLEX_CATEGORIES, UNCATEGORISED
from fairness_core.evaluations.honest.templates import honest_templates, identity_pairs
from fairness_core.evaluations.sentiment.distances import group_distances
from fairness_core.evaluations.sentiment.scorers import LexiconScorer
from fairness_core.evaluations.sentiment.templates import given_names, name_templates
from fairness_core.reporting.results import (
    SCHEMA_FILE,
    SCHEMA_VERSION,
    AuditResults,
    ResultsFileError,
    json_schema,
    read_results,
    write_results,
)
from fairness_core.scorecard import Limit, MetricResult

REGENERATE = (
    "python -c \"import json; from fairness_core.reporting.results import SCHEMA_FILE, json_schema; "
    "SCHEMA_FILE.write_text(json.dumps(json_schema(), indent=2, ensure_ascii=False) + '\\n', encoding='utf-8')\""
)


def generated_schema_text() -> str:
    return json.dumps(json_schema(), indent=2, ensure_ascii=False) + "\n"


# --- the committed schema ---------------------------------------------------------------------------

def test_committed_schema_is_the_generated_schema():
    assert SCHEMA_FILE.is_file(), f"{SCHEMA_FILE} is missing; create it with:\n  {REGENERATE}"
    committed = SCHEMA_FILE.read_text(encoding="utf-8")
    assert committed == generated_schema_text(), (
        f"{SCHEMA_FILE.relative_to(SCHEMA_FILE.parents[2])} no longer matches fairness_core.reporting.results.AuditResults.\n"
        f"If existing results files still validate (a field added with a default), regenerate it with:\n"
        f"  {REGENERATE}\n"
        f"otherwise bump SCHEMA_VERSION in fairness_core/results.py (a new audit-results-v<N>.schema.json) "
        f"so that readers of old files get a clear error."
    )


def test_schema_file_is_named_after_the_version_it_pins():
    assert SCHEMA_FILE.name == f"audit-results-v{SCHEMA_VERSION}.schema.json"
    schema = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    assert schema["properties"]["schema_version"]["const"] == SCHEMA_VERSION
    jsonschema.validators.validator_for(schema).check_schema(schema)


# --- the end-to-end results file --------------------------------------------------------------------

def validator():
    schema = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    return jsonschema.validators.validator_for(schema)(schema)


def completions_by(rows, *keys):
    grouped = defaultdict(list)
    for row in rows:
        grouped[tuple(row[k] for k in keys)].append(row)
    return grouped


def test_audit_json_is_valid_complete_and_traceable(pytester, tiny_model_dirs):
    model = tiny_model_dirs["sentencepiece"]
    setup_audits(pytester)
    content = thresholds(honest={"max_category_score": {UNCATEGORISED: 0.05}}, decision_rule="point")
    path = pytester.path / "out" / "results.json"
    result = run_audit(pytester, model, content, "--seed", "3", f"--audit-json={path}")
    # The identity-term lexicon makes the shipped HONEST limits fail; that is fine here.
    assert result.ret in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED), output(result)
    raw = json.loads(path.read_text(encoding="utf-8"))

    # Valid against the committed schema (and the schema is not vacuous: a bad decision is rejected).
    errors = sorted(validator().iter_errors(raw), key=lambda e: list(e.absolute_path))
    assert not errors, "\n".join(f"{list(e.absolute_path)}: {e.message}" for e in errors[:10])
    broken = json.loads(json.dumps(raw))
    broken["metrics"][0]["decision"] = "maybe"
    assert list(validator().iter_errors(broken))
    assert raw["schema_version"] == SCHEMA_VERSION

    # Thresholds as validated, decision rule included.
    config = validate_config(content)
    assert raw["thresholds"] == json.loads(config.model_dump_json())

    # Provenance: model, seed, protocols, lexicon, scorer, data and versions.
    p = raw["provenance"]
    assert p["model"]["model"] == str(model) and p["model"]["device"] == "cpu"
    assert p["seed"] == 3 and p["fingerprint"]["seed"] == "3" and len(p["fingerprint"]["weights"]) == 64
    assert p["decision_rule"] == "point"
    for evaluation in ("honest", "sentiment"):
        protocol = p["evaluations"][evaluation]["protocol"]
        # a completion run's protocol, without the chat formats' block
        assert protocol == json.loads(getattr(config, evaluation).protocol.model_dump_json(exclude={"chat"}))
        assert {k: protocol[k] for k in TINY_PROTOCOL} == TINY_PROTOCOL
    lexicon = p["evaluations"]["honest"]["lexicon"]
    assert {k: v for k, v in lexicon.items() if k != "sha256"} == {
        "source": str(pytester.path / "words.txt"), "level": "conservative", "entries": len(set(IDENTITY_WORDS))}
    assert len(lexicon["sha256"]) == 64
    assert p["evaluations"]["sentiment"]["scorer"] == LexiconScorer.builtin().description
    assert p["evaluations"]["honest"]["templates"] == [t.id for t in honest_templates()]
    assert p["evaluations"]["sentiment"]["templates"] == [t.id for t in name_templates()]
    assert p["attributes"]["name"] == "gender" and p["attributes"]["groups"] == ["female", "male"]
    assert p["attributes"]["honest_terms"] == [pair.model_dump() for pair in identity_pairs()]
    assert p["attributes"]["sentiment"]["names"]["substitutions"] == \
        {a: [n.name for n in names] for a, names in given_names().items()}
    assert p["not_run"] == {name: "not selected" for name in discover() if name not in ("honest", "sentiment")}
    for package in ("python", "torch", "transformers", "fugashi", "scipy", "pytest"):
        assert p["versions"][package] not in ("", "not installed"), package
    assert p["created"]

    # Every metric, with its decision re-derivable from the recorded value, interval and limit.
    metrics = {m["id"]: m for m in raw["metrics"]}
    assert len(metrics) == len(raw["metrics"]), "metric ids are unique"
    honest_ids = {"honest.honest_ratio"} | {
        f"honest.{kind}[{where}group={a}]"
        for a in ("female", "male")
        for kind, where in [("honest_score", ""), ("pool_ratio", ""),
                            *(("honest_score", f"template={t.id},") for t in honest_templates()),
                            *(("category_score", f"category={c},") for c in (*HURTLEX_CATEGORIES, UNCATEGORISED))]
    }
    sentiment_ids = {"sentiment.average_group_fairness", "sentiment.mean_gap", "sentiment.counterfactual_fairness"} | {
        f"sentiment.{kind}[{where}group={a}]"
        for a in ("female", "male")
        for kind, where in [("group_distance", ""), ("mean_sentiment", ""),
                            *(("group_distance", f"template={t.id},") for t in name_templates())]
    }
    assert set(metrics) == honest_ids | sentiment_ids
    assert {m for m in GATED_METRICS if m.startswith(("honest.", "sentiment."))} <= set(metrics)
    for m in metrics.values():
        limit = Limit(m["limit_upper"], m["limit_lower"]) if m["limit_upper"] is not None else None
        recomputed = MetricResult(m["id"], m["evaluation"], m["metric"], value=m["value"],
                                  interval=tuple(m["interval"]) if m["interval"] else None, limit=limit, sample="")
        assert m["decision"] == recomputed.decision("point"), m
        assert (m["decision"] == "skipped") == (m["value"] is None) == (m["skip_reason"] is not None), m
    assert metrics["honest.honest_score[group=female]"]["limit_upper"] == config.honest.max_honest_score["female"]
    assert metrics["honest.honest_ratio"]["limit_upper"] == config.honest.max_ratio
    assert metrics["honest.honest_ratio"]["limit_lower"] == pytest.approx(1 / config.honest.max_ratio)
    assert metrics["sentiment.group_distance[template=name-01,group=male]"]["limit_upper"] == \
        config.sentiment.max_template_distance
    assert metrics["honest.category_score[category=unlisted,group=male]"]["limit_upper"] == 0.05
    assert metrics["honest.category_score[category=unlisted,group=male]"]["aggregate"] is True
    assert metrics["sentiment.mean_gap"]["p_value"] is not None
    assert {m["decision"] for m in metrics.values()} >= {"pass", "fail"}

    # Every completion, traceable to its template, term and prompt, with what was found in it.
    honest_rows, sentiment_rows = raw["completions"]["honest"], raw["completions"]["sentiment"]
    samples = TINY_PROTOCOL["num_samples"]
    assert len(honest_rows) == len(honest_templates()) * 2 * len(identity_pairs()) * samples
    assert len(sentiment_rows) == len(name_templates()) * sum(map(len, given_names().values())) * samples
    honest_text = {t.id: t for t in honest_templates()}
    name_text = {t.id: t for t in name_templates()}
    terms = {pair.female: "female" for pair in identity_pairs()} | {pair.male: "male" for pair in identity_pairs()}
    names = {n.name: a for a, group in given_names().items() for n in group}
    samples_seen: dict[str, list[int]] = {}
    for row in honest_rows:
        assert row["prompt"] == honest_text[row["template_id"]].fill(row["term"])
        assert terms[row["term"]] == row["group"] and set(row["detail"]) == {"matches", "sample"}
        samples_seen.setdefault(row["prompt"], []).append(row["detail"]["sample"])
        for match in row["detail"]["matches"]:
            assert match["surface"] in row["completion"] and match["lemma"] in IDENTITY_WORDS
            assert match["category"] == UNCATEGORISED
    # each prompt's completions say which of its samples they are (the regression gate pairs baselines by them)
    assert all(seen == list(range(samples)) for seen in samples_seen.values())
    for row in sentiment_rows:
        assert row["prompt"] == name_text[row["template_id"]].fill(row["term"])
        assert names[row["term"]] == row["group"] and set(row["detail"]) == {"score"}
        assert 0.0 <= row["detail"]["score"] <= 1.0
    for (template_id, term), rows in completions_by(honest_rows, "template_id", "term").items():
        assert len(rows) == samples, (template_id, term)

    # The numbers are computed from exactly these completions.
    hurtful = [row for row in honest_rows if row["detail"]["matches"]]
    assert hurtful, "the identity-term lexicon matches some completions"
    for group in ("female", "male"):
        rows = [r for r in honest_rows if r["group"] == group]
        score = metrics[f"honest.honest_score[group={group}]"]
        assert score["value"] == sum(bool(r["detail"]["matches"]) for r in rows) / len(rows)
        assert score["sample"] == f"{sum(bool(r['detail']['matches']) for r in rows)} hurtful of {len(rows)} completions"
        for template in honest_templates():
            cell = [r for r in rows if r["template_id"] == template.id]
            found = metrics[f"honest.honest_score[template={template.id},group={group}]"]["value"]
            assert found == sum(bool(r["detail"]["matches"]) for r in cell) / len(cell)
        scores = [r["detail"]["score"] for r in sentiment_rows if r["group"] == group]
        assert metrics[f"sentiment.mean_sentiment[group={group}]"]["value"] == pytest.approx(
            sum(scores) / len(scores))
    distances = group_distances({a: [r["detail"]["score"] for r in sentiment_rows if r["group"] == a]
                                 for a in ("female", "male")})
    for group, distance in distances.items():
        assert metrics[f"sentiment.group_distance[group={group}]"]["value"] == pytest.approx(distance)

    # Generation health per evaluation and group.
    health = {(h["evaluation"], h["group"]): h for h in raw["health"]}
    assert set(health) == {(e, a) for e in ("honest", "sentiment") for a in ("female", "male")}
    assert health["honest", "female"]["completions"] == len(honest_rows) // 2
    assert health["sentiment", "male"]["completions"] == len(sentiment_rows) // 2
    for h in health.values():
        assert all(0 <= h[k] <= 1 for k in ("empty_share", "repeat_share", "loop_share"))
    assert isinstance(raw["confounds"], list)

    # Reading the file back gives the same results, and writing them again the same bytes.
    results = read_results(path)
    assert isinstance(results, AuditResults)
    assert results.model_dump(mode="json") == raw
    again = pytester.path / "again.json"
    write_results(results, again)
    assert again.read_text(encoding="utf-8") == path.read_text(encoding="utf-8")


# --- reading results files ---------------------------------------------------------------------------

def test_read_results_of_a_minimal_file(tmp_path):
    path = tmp_path / "ok.json"
    path.write_text(json.dumps(minimal_results()), encoding="utf-8")
    assert read_results(path).provenance.model == {"model": "m"}
    assert not list(validator().iter_errors(minimal_results()))


def test_where_the_limits_came_from_is_optional_and_shown_in_the_report(tmp_path):
    """A file written before ``provenance.limits`` reads; one with it validates, and the report shows its sources."""
    from fairness_core.reporting.report import summary_html

    assert read_results_of(tmp_path, minimal_results()).provenance.limits == {}
    content = minimal_results()
    content["provenance"]["limits"] = {"honest": "file", "sentiment": "file", "bbq": "package"}
    assert not list(validator().iter_errors(content))
    html = summary_html(read_results_of(tmp_path, content))
    assert ("<td class=\"\">bbq limits</td><td class=\"\">the package&#x27;s limits; your thresholds file has no bbq "
            "section</td>") in html
    assert "honest limits" not in html and "sentiment limits" not in html
    content["provenance"]["limits"]["bbq"] = "somewhere"
    assert list(validator().iter_errors(content))
    with pytest.raises(ResultsFileError, match=r"provenance\.limits\.bbq"):
        read_results_of(tmp_path, content)


def read_results_of(folder: Path, content: dict) -> AuditResults:
    path = folder / "results.json"
    path.write_text(json.dumps(content), encoding="utf-8")
    return read_results(path)


def test_read_results_of_a_missing_file_names_it(tmp_path):
    path = tmp_path / "missing.json"
    with pytest.raises(ResultsFileError, match=rf"^Cannot read the audit results file '{path}': "):
        read_results(path)


@pytest.mark.parametrize("text", ["not json at all", "{\"schema_version\": 1,", "", "\x00\x01"])
def test_read_results_of_garbage_names_the_file(tmp_path, text):
    path = tmp_path / "garbage.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ResultsFileError, match=rf"^Cannot read the audit results file '{path}': "):
        read_results(path)


def test_read_results_of_undecodable_bytes_names_the_file(tmp_path):
    path = tmp_path / "latin1.json"
    path.write_bytes("{\"model\": \"é\"}".encode("latin-1"))
    with pytest.raises(ResultsFileError, match=rf"^Cannot read the audit results file '{path}'"):
        read_results(path)


@pytest.mark.parametrize("version", [1, 6, 0, "2", None])
def test_read_results_of_another_schema_version_names_file_and_versions(tmp_path, version):
    content = minimal_results()
    content["schema_version"] = version
    path = tmp_path / "other.json"
    path.write_text(json.dumps(content), encoding="utf-8")
    with pytest.raises(ResultsFileError) as info:
        read_results(path)
    assert str(info.value) == (f"The audit results file {str(path)!r} has schema_version {version!r}; "
                               f"this version reads 2, 3, 4, 5.")


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (lambda c: c.pop("metrics"), "metrics"),
        (lambda c: c["provenance"].update(seed="zero"), "provenance.seed"),
        (lambda c: c.update(surprise=1), "surprise"),
    ],
    ids=["missing-field", "wrong-type", "unknown-field"],
)
def test_read_results_of_invalid_content_names_the_file_and_field(tmp_path, change, field):
    content = minimal_results()
    change(content)
    path = tmp_path / "invalid.json"
    path.write_text(json.dumps(content), encoding="utf-8")
    with pytest.raises(ResultsFileError, match=rf"^The audit results file '{path}' is not valid audit results:\n") \
            as info:
        read_results(path)
    assert field in str(info.value)


@pytest.mark.parametrize("text", ["[]", "42", "\"results\""])
def test_read_results_of_json_that_is_not_an_object(tmp_path, text):
    path = tmp_path / "list.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ResultsFileError, match=rf"^The audit results file '{path}'"):
        read_results(path)


def test_read_results_of_a_directory_names_it(tmp_path):
    with pytest.raises(ResultsFileError, match=rf"^Cannot read the audit results file '{tmp_path}'"):
        read_results(Path(tmp_path))


def test_a_version_2_file_which_said_attribute_is_read_as_version_3(tmp_path):
    """Baselines written before the group/attribute rename still gate: the fields and ids are translated."""
    current = minimal_results()
    current["metrics"] = [{"id": "honest.honest_score[template=t-01,group=female]", "evaluation": "honest",
                           "metric": "honest_score", "group": "female", "template_id": "t-01", "category": None,
                           "value": 0.1, "interval": [0.05, 0.2], "p_value": None, "limit_upper": 0.25,
                           "limit_lower": None, "decision": "pass", "skip_reason": None, "aggregate": False,
                           "sample": "1 hurtful of 10 completions"}]
    current["health"] = [{"evaluation": "honest", "group": "female", "completions": 10, "empty_share": 0.0,
                          "repeat_share": 0.0, "loop_share": 0.0, "mean_length": 5.0}]
    current["completions"] = {"honest": [{"template_id": "t-01", "group": "female", "term": "母", "prompt": "母は",
                                          "completion": "優しい。"}]}
    text = json.dumps(current, ensure_ascii=False).replace('"group"', '"attribute"').replace("group=", "attribute=")
    old = json.loads(text) | {"schema_version": 2}
    assert "attribute=female" in text and '"group"' not in text
    path = tmp_path / "v2.json"
    path.write_text(json.dumps(old), encoding="utf-8")
    assert read_results(path).model_dump(mode="json") == read_results_from(current, tmp_path).model_dump(mode="json")


def test_a_version_3_file_with_an_evaluations_fields_is_read_with_them_as_detail(tmp_path):
    """Baselines written before the open ``detail`` field: an evaluation's own fields of a record move into it."""
    current = minimal_results()
    current["completions"] = {"honest": [{"template_id": "t-01", "group": "female", "term": "母", "prompt": "母は",
                                          "completion": "馬鹿だ。", "detail": {"matches": [
                                              {"lemma": "馬鹿", "category": "cds", "surface": "馬鹿", "start": 0, "end": 2}]}}],
                              "sentiment": [{"template_id": "n-01", "group": "male", "term": "蓮", "prompt": "蓮は",
                                             "completion": "優しい。", "detail": {"score": 0.9}}]}
    old = json.loads(json.dumps(current))
    old["schema_version"] = 3
    old["completions"]["honest"][0] = {**old["completions"]["honest"][0].pop("detail"), **old["completions"]["honest"][0],
                                       "score": None}
    old["completions"]["sentiment"][0] = {**old["completions"]["sentiment"][0].pop("detail"),
                                          **old["completions"]["sentiment"][0], "matches": None}
    path = tmp_path / "v3.json"
    path.write_text(json.dumps(old, ensure_ascii=False), encoding="utf-8")
    assert read_results(path).model_dump(mode="json") == read_results_from(current, tmp_path).model_dump(mode="json")


def read_results_from(content: dict, folder) -> AuditResults:
    path = folder / "current.json"
    path.write_text(json.dumps(content), encoding="utf-8")
    return read_results(path)
