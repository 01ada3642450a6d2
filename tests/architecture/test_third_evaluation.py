"""A third-party evaluation (the fourth installed) from a package of its own is seen by the audit, ``plan`` and
``generate``, and runs end to end.

The stub (``tests/data/stub_evaluation/``) is installed the way pip installs a
package: its folder on the path and a ``.dist-info`` holding the entry point
of its ``pyproject.toml``, which ``importlib.metadata`` finds.  Nothing of
``fairness_core`` is touched: its folder and that entry point are all it needs.
Its section of the thresholds file is optional (issue 39): neither a user's file
written before it was installed nor the package's own file has one, so it runs
with the defaults of its section model, and the header and ``plan`` say so.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import tomllib
import yaml

from fairness_core.api.discovery import discover

STUB = Path(__file__).resolve().parents[1] / "data" / "stub_evaluation"
SHIPPED = Path(__file__).resolve().parents[2] / "fairness_core" / "data" / "thresholds.yaml"
#: Fewer samples, so that generate takes seconds: this checks what is generated, not the audit's protocol.
SMALL = {"num_samples": 1, "max_new_tokens": 4}
#: What the header and ``plan`` say when no thresholds file has a stub section.
DEFAULTS_NOTE = "stub: the defaults of its own section model; the thresholds file has no stub section, nor has the package's"
#: A user's attribute set that only the stub applies to (no HONEST, sentiment or BBQ section, not a built-in name):
#: with the package's own thresholds file, ``generate`` then makes the stub's completions only.
PAIR = {"name": "pair", "groups": {"kanto": "関東の人", "kansai": "関西の人"}}


def install_stub(site: Path) -> None:
    """The stub package and a ``.dist-info`` with the entry points of its pyproject.toml, in the folder ``site``."""
    project = tomllib.loads((STUB / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    shutil.copytree(STUB / "stub_evaluation", site / "stub_evaluation")
    info = site / f"{project['name'].replace('-', '_')}-{project['version']}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: {project['version']}\n",
                                   encoding="utf-8")
    entry_points = "".join(f"[{group}]\n" + "".join(f"{name} = {target}\n" for name, target in points.items())
                           for group, points in project["entry-points"].items())
    (info / "entry_points.txt").write_text(entry_points, encoding="utf-8")


def users_thresholds(folder: Path, *, stub: dict | None = None) -> Path:
    """The shipped file with small protocols, as a user keeps it: without a stub section unless ``stub`` is given."""
    raw = yaml.safe_load(SHIPPED.read_text(encoding="utf-8"))
    for section in ("honest", "sentiment"):
        raw[section]["protocol"] = {**raw[section]["protocol"], **SMALL}
    if stub is not None:
        raw["stub"] = stub
    path = folder / "my-thresholds.yaml"
    path.write_text(yaml.safe_dump(raw, allow_unicode=True), encoding="utf-8")
    return path


@pytest.fixture
def stub_installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    site = tmp_path / "site"
    site.mkdir()
    install_stub(site)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")])))
    return site


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "fairness_core.cli", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=600)


@pytest.mark.slow
@pytest.mark.parametrize("thresholds", ["a user's file without a stub section", "the package's own file"])
def test_the_audit_collects_and_runs_it(stub_installed, pytester: pytest.Pytester, thresholds):
    given = [f"--thresholds={users_thresholds(pytester.path)}"] if thresholds.startswith("a user's") else []
    assert not (pytester.path / "thresholds.yaml").exists()  # without --thresholds the run takes the package's file
    result = pytester.runpytest_subprocess("--pyargs", "fairness_core.audits", "-k", "stub", "--model=demo",
                                           "--no-cache", "--audit-json=audit.json", "-p", "no:cacheprovider", *given)
    # Four new tokens rarely finish a sentence: both groups are past the default limit of one half.
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(["  stub: 4 prompts x 2 samples", f"  {DEFAULTS_NOTE}", "  honest: not selected",
                                 "*AUDIT VIOLATION: unfinished_share*", "*group female*", "*evidence (*",
                                 "not run: honest: not selected"])
    assert "Traceback" not in result.stdout.str()
    written = json.loads((pytester.path / "audit.json").read_text(encoding="utf-8"))
    assert {m["id"] for m in written["metrics"]} == {"stub.unfinished_share[group=female]",
                                                     "stub.unfinished_share[group=male]"}
    assert {m["limit_upper"] for m in written["metrics"]} == {0.5}
    assert written["provenance"]["limits"] == {"stub": "defaults"}
    assert set(written["provenance"]["not_run"]) == set(discover())  # every shipped evaluation, the stub's not
    assert all("unfinished" in record["detail"] for record in written["completions"]["stub"])
    assert sorted(p.name for p in stub_installed.iterdir()) == ["stub_evaluation", "stub_evaluation-0.1.0.dist-info"]


@pytest.mark.parametrize("thresholds", ["a user's file without a stub section", "the package's own file"])
def test_plan_shows_it_and_where_its_limits_came_from(stub_installed, tmp_path: Path, thresholds):
    given = [f"--thresholds={users_thresholds(tmp_path)}"] if thresholds.startswith("a user's") else []
    done = cli("plan", *given, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "  stub: 4 prompts x 2 samples" in done.stdout.splitlines()
    assert f"  {DEFAULTS_NOTE}" in done.stdout.splitlines()
    assert "package's limits" not in done.stdout  # the shipped evaluations' sections are in both files


def test_its_own_section_is_used_when_the_file_has_one(stub_installed, tmp_path: Path):
    path = users_thresholds(tmp_path, stub={"protocol": {"num_samples": 3, "max_new_tokens": 4}})
    done = cli("plan", f"--thresholds={path}", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "  stub: 4 prompts x 3 samples" in done.stdout.splitlines()
    assert "stub: the defaults" not in done.stdout


def _completions(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.mark.slow
def test_generate_writes_its_completions(stub_installed, tmp_path: Path):
    path = users_thresholds(tmp_path)
    done = cli("generate", "--model=demo", "--device=cpu", "--no-cache", f"--thresholds={path}", "--output=out.jsonl",
               cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = _completions(tmp_path / "out.jsonl")
    assert lines[0]["manifest"]["evaluations"]["stub"]["prompts"] == 4
    assert lines[0]["manifest"]["evaluations"]["stub"]["protocol"]["num_samples"] == 2  # its model's default
    assert sum(line["prompt_id"].startswith("stub/") for line in lines[1:]) == 8


def test_generate_with_the_packages_own_file_writes_its_completions(stub_installed, tmp_path: Path):
    pair = tmp_path / "pair.yaml"
    pair.write_text(yaml.safe_dump(PAIR, allow_unicode=True), encoding="utf-8")
    done = cli("generate", "--model=demo", "--device=cpu", "--no-cache", f"--attributes={pair}", "--output=out.jsonl",
               cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = _completions(tmp_path / "out.jsonl")
    assert set(lines[0]["manifest"]["evaluations"]) == {"stub"}
    assert {line["prompt_id"].split("/")[0] for line in lines[1:]} == {"stub"} and len(lines) == 1 + 8
