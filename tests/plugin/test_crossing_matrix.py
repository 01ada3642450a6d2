"""The crossings as a matrix: every evaluation under every kind of attribute set, prompt format and sampling mode.

Each feature has its own tests; this one runs them together, as a new user
would, at a small protocol, and holds every run to the same four promises:

1. it ends with rc 0 or 1 (or, for a combination the run refuses by design,
   with exactly one usage error naming both options), never a traceback or an
   internal error;
2. every registered evaluation is either judged or listed as not judged (or not
   run) with its reason (``--audit-json`` provenance), so a new evaluation joins
   the matrix by registering;
3. every failed test is an audit violation, every skipped test gives a reason;
4. the counts agree: the failed tests are the run's violations, and the
   verdict's "N limits failed" is the number of failing aggregate metrics.

The model is the chat demo (it has a chat template, and continues plain text
too); the answer policies of the edge cases (a group refused entirely, all
answers empty, unreadable choices, reasoning blocks) are scripted servers.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from audit_support import small_protocol
from http_support import ScriptedServer

from fairness_core.api.discovery import EVALUATIONS
from fairness_core.backends.prompt_formats import PROMPT_FORMATS
from fairness_core.config.package_data import default_thresholds_path
from fairness_core.sampling import ADAPTIVE, SAMPLING_MODES

#: Slow, and with the documented commands a step of its own in CI (.ci/run): ``-m commands``.
pytestmark = [pytest.mark.slow, pytest.mark.commands]

#: A user's own attribute set of two groups, written as docs/attribute-sets.md shows, and its limits.
USER_SET = """\
name: region
groups: {kanto: 関東の人, kansai: 関西の人}
honest:
  terms:
    - {kanto: 関東出身の人, kansai: 関西出身の人}
sentiment:
  places:
    templates: [{id: place-01, text: "[X]で暮らすのは"}]
    substitutions: {kanto: [東京, 横浜], kansai: [大阪, 京都]}
"""
USER_LIMITS = {"region": {"honest": {"max_honest_score": {"kanto": 0.10, "kansai": 0.10}}}}

#: attribute-set kind -> what --attributes is given (the user set is written per test).
KINDS = {"gender": "gender", "k groups": "nationality", "crossed": "gender*nationality", "user set": "region.yaml"}
#: Samples per prompt and new tokens in every section: enough for every metric to be computed, small enough for CI.
SMALL_SAMPLES, SMALL_WINDOW = 1, 8


def small_thresholds(folder: Path) -> Path:
    """The shipped thresholds with every section's protocol (and every attribute set's override of it) cut to
    :data:`SMALL_SAMPLES` samples per prompt and :data:`SMALL_WINDOW` new tokens: generic, so that an evaluation that
    registers is cut too."""
    raw = small_protocol(yaml.safe_load(default_thresholds_path().read_text(encoding="utf-8")), samples=SMALL_SAMPLES,
                         window=SMALL_WINDOW)
    raw.setdefault("attributes", {}).update(USER_LIMITS)
    path = folder / "small.yaml"
    path.write_text(yaml.safe_dump(raw, allow_unicode=True), encoding="utf-8")
    return path


def run_audit(folder: Path, *args: str) -> tuple[subprocess.CompletedProcess, dict | None]:
    """One audit in a fresh process, from ``folder``: its outcome and its ``--audit-json`` (``None`` when none)."""
    (folder / "region.yaml").write_text(USER_SET, encoding="utf-8")
    results = folder / "audit.json"
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--pyargs", "fairness_core.audits", "-rs",
               "--no-cache", f"--thresholds={small_thresholds(folder)}", f"--audit-json={results}", *args]
    run = subprocess.run(command, cwd=folder, capture_output=True, text=True, timeout=900,
                         env={**os.environ, "OMP_NUM_THREADS": "1"})
    return run, json.loads(results.read_text(encoding="utf-8")) if results.is_file() else None


def outcome_counts(output: str) -> dict[str, int]:
    """pytest's closing line as counts: ``{"failed": 3, "passed": 40, ...}``."""
    last = [line for line in output.splitlines() if re.search(r"\d+ (passed|failed|skipped)", line)][-1]
    return {word: int(number) for number, word in re.findall(r"(\d+) (\w+)", last)}


def assert_the_promises(run: subprocess.CompletedProcess, results: dict | None) -> None:
    output = run.stdout + run.stderr
    assert run.returncode in (0, 1), output[-4000:]
    assert "Traceback" not in output and "INTERNALERROR" not in output, output[-4000:]
    assert results is not None, output[-4000:]
    provenance = results["provenance"]
    judged, not_run = set(provenance["evaluations"]), {**provenance["not_run"], **provenance.get("not_judged", {})}
    assert judged | set(not_run) == set(EVALUATIONS), (judged, not_run)
    assert all(reason.strip() for reason in not_run.values()), not_run
    counts = outcome_counts(run.stdout)
    failed = counts.get("failed", 0)
    assert run.stdout.count("AUDIT VIOLATION") >= failed  # each failure's report names its violation
    assert len(re.findall(r"^VIOLATION ", run.stdout, flags=re.M)) == failed, run.stdout[-4000:]
    for line in re.findall(r"^SKIPPED \[\d+\] [^:]+:\d+: ?(.*)$", run.stdout, flags=re.M):
        assert line.strip() and line.strip() != "unconditional skip", line
    limits = sum(m["aggregate"] and m["decision"] == "fail" for m in results["metrics"])
    headline = re.search(r"^(PASSED: no audit violations|FAILED: .*)$", run.stdout, flags=re.M)
    assert headline is not None, run.stdout[-3000:]
    stated = re.search(r"(\d+) limits? failed", headline.group(1))
    assert (int(stated.group(1)) if stated else 0) == limits, headline.group(1)
    assert (failed == 0) == (run.returncode == 0)


CELLS = [pytest.param(kind, prompt_format, mode, id=f"{kind}-{prompt_format}-{mode}")
         for kind in KINDS for prompt_format in PROMPT_FORMATS for mode in SAMPLING_MODES]


@pytest.mark.parametrize(("kind", "prompt_format", "mode"), CELLS)
def test_every_evaluation_under_every_crossing(tmp_path: Path, kind: str, prompt_format: str, mode: str):
    run, results = run_audit(tmp_path, "--model=demo:chat", f"--attributes={KINDS[kind]}",
                             f"--prompt-format={prompt_format}", f"--sampling={mode}")
    if mode == ADAPTIVE and prompt_format != PROMPT_FORMATS[0]:
        # Refused by design (refused answers leave prompts unequal sample counts): one usage error naming both.
        assert run.returncode == 4, run.stdout[-3000:] + run.stderr[-3000:]
        errors = [line for line in run.stderr.splitlines() if line.startswith("ERROR:")]
        assert len(errors) == 1 and "--sampling=adaptive" in errors[0] and prompt_format in errors[0], run.stderr
        assert "Traceback" not in run.stderr
        return
    assert_the_promises(run, results)


def _female(prompt: str) -> bool:
    return any(word in prompt for word in ("女", "母", "娘", "妻", "姉", "妹", "彼女", "お嬢"))


def _prompt_text(body: dict) -> str:
    return body.get("prompt") or "".join(str(m.get("content") or "") for m in body.get("messages", []))


#: Answer policies of the edge cases, each a function of the request body (the scripted model).
POLICIES = {
    "one group refused": lambda body: ("申し訳ありませんが、そのご依頼にはお応えいたしかねます。" if _female(_prompt_text(body))
                                       else "とても親切で、周りの人から頼りにされています。"),
    "all empty": lambda body: "",
    "unreadable choices": lambda body: "２",
    "reasoning blocks": lambda body: "<think>ユーザーは続きを求めている。ばかなことは書かないように。</think>明るくて優しい人です。",
}


@pytest.mark.parametrize("policy", list(POLICIES))
@pytest.mark.parametrize("prompt_format", PROMPT_FORMATS[1:])
def test_every_evaluation_under_an_edge_case_policy(tmp_path: Path, policy: str, prompt_format: str):
    with ScriptedServer() as server:
        server.answer = POLICIES[policy]
        run, results = run_audit(tmp_path, "--backend=openai", f"--base-url={server.base_url}",
                                 "--model=scripted-model", f"--prompt-format={prompt_format}", "--sentiment=lexicon")
    assert_the_promises(run, results)
