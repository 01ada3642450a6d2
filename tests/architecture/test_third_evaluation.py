"""A third evaluation from a package of its own is seen by the audit, ``plan`` and ``generate``, and runs end to end.

The stub (``tests/data/stub_evaluation/``) is installed the way pip installs a
package: its folder on the path and a ``.dist-info`` holding the entry point
of its ``pyproject.toml``, which ``importlib.metadata`` finds.  Nothing of
``fairness_core`` is touched: its folder, that entry point and its section of
the thresholds file are all it needs.
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


def thresholds_with_stub(folder: Path, *, stub: bool = True) -> Path:
    raw = yaml.safe_load(SHIPPED.read_text(encoding="utf-8"))
    for section in ("honest", "sentiment"):
        raw[section]["protocol"] = {**raw[section]["protocol"], **SMALL}
    if stub:
        raw["stub"] = {"max_unfinished_share": 0.5}
    path = folder / "thresholds.yaml"
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
def test_the_audit_collects_and_runs_it(stub_installed, pytester: pytest.Pytester):
    thresholds_with_stub(pytester.path)
    result = pytester.runpytest_subprocess("--pyargs", "fairness_core.audits", "-k", "stub", "--model=demo",
                                           "--no-cache", "--audit-json=audit.json", "-p", "no:cacheprovider")
    # Four new tokens rarely finish a sentence: both groups are past a limit of one half.
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(["*stub: 4 prompts x 2 samples*", "*AUDIT VIOLATION: unfinished_share*",
                                 "*group female*", "*evidence (*", "*not run: honest: not selected*"])
    assert "Traceback" not in result.stdout.str()
    written = json.loads((pytester.path / "audit.json").read_text(encoding="utf-8"))
    assert {m["id"] for m in written["metrics"]} == {"stub.unfinished_share[group=female]",
                                                     "stub.unfinished_share[group=male]"}
    assert set(written["provenance"]["not_run"]) == set(discover())  # every shipped evaluation, the stub's not
    assert all("unfinished" in record["detail"] for record in written["completions"]["stub"])
    assert sorted(p.name for p in stub_installed.iterdir()) == ["stub_evaluation", "stub_evaluation-0.1.0.dist-info"]


def test_plan_shows_it(stub_installed, tmp_path: Path):
    path = thresholds_with_stub(tmp_path)
    done = cli("plan", f"--thresholds={path}", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "  stub: 4 prompts x 2 samples" in done.stdout


@pytest.mark.slow
def test_generate_writes_its_completions(stub_installed, tmp_path: Path):
    path = thresholds_with_stub(tmp_path)
    done = cli("generate", "--model=demo", "--device=cpu", "--no-cache", f"--thresholds={path}", "--output=out.jsonl",
               cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text(encoding="utf-8").splitlines()]
    assert lines[0]["manifest"]["evaluations"]["stub"]["prompts"] == 4
    assert sum(line["prompt_id"].startswith("stub/") for line in lines[1:]) == 8


def test_a_thresholds_file_without_its_section_is_one_usage_error(stub_installed, tmp_path: Path):
    path = thresholds_with_stub(tmp_path, stub=False)
    done = cli("plan", f"--thresholds={path}", cwd=tmp_path)
    assert done.returncode == 4
    assert "thresholds.yaml' is invalid:" in done.stderr and "stub: Field required" in done.stderr
    assert "Traceback" not in done.stderr
