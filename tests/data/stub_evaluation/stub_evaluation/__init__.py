"""A third-party evaluation written the way a contributor would add one: one folder, one entry point, and a thresholds
section that is optional (its section model has a default for every key).

It asks every group's label to finish a sentence and measures the share of
completions that are cut off mid-sentence (no 。): a made-up but honest
metric, enough to exercise the whole path from prompts to verdicts.
"""
