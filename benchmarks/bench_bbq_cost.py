"""What the BBQ evaluation's likelihood scorer costs: scored continuations, forward passes and wall time per category.

Measured on ``demo:qa`` (GPT-2, 128 wide, 3 layers, 256 positions), the demo
model trained to answer the gender questions: ``--model=demo`` has 64
positions and skips the evaluation, and the cost does not depend on what the
weights say, only on the model's shape and the texts.  Each item's three options are
scored after its context and question; the engine scores each distinct
(context, option) pair once, batched (the audit's own batch size unless
``--batch-size``), so the forward passes are the distinct pairs divided by the
batch size, rounded up.

    python benchmarks/bench_bbq_cost.py [--attributes gender nationality occupation] [--batch-size N]
"""

from __future__ import annotations

import argparse
import math
import platform
import time

import torch

from fairness_core.backends.hf.engine import HFBackend, load_model
from fairness_core.evaluations.bbq.prompts import likelihood_context
from fairness_core.evaluations.bbq.scoring import by_likelihood
from fairness_core.run.demo_names import resolve_demo
from fairness_core.run.setup import AuditSetup


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--attributes", nargs="+", default=["gender", "nationality", "occupation"])
    parser.add_argument("--batch-size", type=int, default=None, help="default: the engine's automatic batch size")
    args = parser.parse_args()
    model, tokenizer = load_model(str(resolve_demo("demo:qa")), device="cpu")
    backend = HFBackend(model, tokenizer, batch_size=args.batch_size or "auto")
    print(f"{platform.machine()}, torch threads {torch.get_num_threads()}")
    for name in args.attributes:
        evaluation = AuditSetup.load("thresholds.yaml", name).evaluations["bbq"]
        items = evaluation.questions.items
        pairs = {(likelihood_context(i.context, i.question), option) for i in items for option in i.answers}
        started = time.perf_counter()
        answers = by_likelihood(backend, items, "per_character")
        elapsed = time.perf_counter() - started
        assert answers.skip_reason is None, answers.skip_reason
        print(f"{name}: {len(items)} items, {3 * len(items)} scored continuations, {len(pairs)} distinct texts, "
              f"{math.ceil(len(pairs) / backend.batch_size)} forward passes of up to {backend.batch_size}, {elapsed:.1f} s")


if __name__ == "__main__":
    main()
