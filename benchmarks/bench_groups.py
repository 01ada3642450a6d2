"""How the audit's work after generation grows with the number of groups: k = 2, 8, 29 and 50.

A user's attribute set with 50 groups once never finished: its completions
took seconds, but the metrics were still being computed after 6 min 42 s.
Each group's bootstrap interval recomputed every group's statistic (the pool,
every W1 distance), so one template's intervals cost k x k statistics per
resample.  Now one pass per resample gives every group's value
(``statistics.bootstrap_intervals``).

Each row builds a set of k groups (one HONEST term tuple over the 32
templates; one sentiment family of 4 templates x 2 names per group), audits it
under the shipped top-level protocol (20 samples per HONEST prompt, 1 per
sentiment prompt) with a stand-in backend that answers instantly from a fixed
pool of completions (some hurtful, some positive or negative), and times the
session's scoring and metrics (``AuditSession.compute_all``) and the results
file (``results.build_results``).  Generation is not what is measured, so no
model runs.  ``run`` uses only the session's public API, so the same function
times an older checkout for comparison (see benchmarks/README.md).

    python benchmarks/bench_groups.py [--groups 2 8 29 50]

Target: 50 groups compute their metrics in under 30 s on 2 cores.
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from pathlib import Path

import yaml

from fairness_core.api.options import AuditOptions
from fairness_core.backends.base import BackendSettings, Completion, ModelReference
from fairness_core.backends.hf.cpu_features import cpu_line
from fairness_core.config.package_data import default_thresholds_path
from fairness_core.reporting.results import build_results
from fairness_core.run.session import AuditSession
from fairness_core.run.setup import AuditSetup

#: Completions the stand-in backend draws from: hurtful ones for HONEST, polar ones for the lexicon scorer.
POOL = ("医者になることだ。", "馬鹿だと言われた。", "とても優しい人だ。", "嫌われている。", "毎日働いている。",
        "売春婦だと噂された。", "楽しい時間を過ごした。", "最悪な結果になった。")


class PoolBackend:
    """Answers every request from :data:`POOL`, seeded by the request, instantly."""

    description = {"model": "pool", "backend": "pool"}
    fingerprint = {"backend": "pool"}

    def generate(self, requests, protocol):
        return [Completion(random.Random(f"{r.prompt}{r.sample_index}").choice(POOL), 5) for r in requests]


def attribute_set(k: int) -> dict:
    groups = {f"g{i:02d}": f"第{i}群の人" for i in range(k)}
    return {
        "name": f"groups{k}",
        "groups": groups,
        "honest": {"terms": [{g: f"{label}たち" for g, label in groups.items()}]},
        "sentiment": {"places": {
            "templates": [{"id": f"place-{t:02d}", "text": text} for t, text in
                          enumerate(("[X]と話すのは", "[X]の印象は", "[X]と働くのは", "[X]について言えば"), 1)],
            "substitutions": {g: [f"{label}A", f"{label}B"] for g, label in groups.items()}}},
    }


def thresholds(k: int, folder: Path) -> Path:
    raw = yaml.safe_load(default_thresholds_path().read_text(encoding="utf-8"))
    raw.setdefault("attributes", {})[f"groups{k}"] = {
        "honest": {"max_honest_score": {f"g{i:02d}": 0.5 for i in range(k)}}}
    path = folder / f"thresholds-{k}.yaml"
    path.write_text(yaml.safe_dump(raw, allow_unicode=True, sort_keys=False), encoding="utf-8")
    return path


def run(k: int, folder: Path) -> tuple[float, float]:
    """(seconds of scoring and metrics, seconds of the results file) for k groups."""
    set_path = folder / f"groups{k}.yaml"
    set_path.write_text(yaml.safe_dump(attribute_set(k), allow_unicode=True), encoding="utf-8")
    limits = thresholds(k, folder)
    setup = AuditSetup.load(limits, str(set_path))
    options = AuditOptions(BackendSettings(model=ModelReference("pool")), "pool", {"sentiment": "lexicon"})
    session = AuditSession(options, setup, selected=list(setup.evaluations), backend=PoolBackend())
    start = time.perf_counter()
    session.compute_all()
    metrics = time.perf_counter() - start
    start = time.perf_counter()
    build_results(session)
    return metrics, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", type=int, nargs="+", default=[2, 8, 29, 50])
    args = parser.parse_args()
    print(f"CPU: {cpu_line()}")
    print(f"{'groups':>6} {'scoring+metrics s':>18} {'results file s':>15}")
    with tempfile.TemporaryDirectory() as tmp:
        for k in args.groups:
            metrics, report = run(k, Path(tmp))
            print(f"{k:>6} {metrics:>18.1f} {report:>15.1f}")


if __name__ == "__main__":
    main()
