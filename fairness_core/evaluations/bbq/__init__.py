"""Bias in question answering, BBQ-style (Parrish et al., Findings of ACL 2022), in Japanese as JBBQ does it.

HONEST and sentiment read open completions; this evaluation asks the model to
decide.  Given a context about two people that leaves the answer open, does it
pick the stereotyped person instead of "unknown"?  Given a context that
settles it, does it answer better when the answer agrees with the stereotype?
The questions are the project's own reviewed templates for the built-in
attribute sets (``data/``), an attribute set's ``bbq:`` section, or a user's
BBQ or JBBQ file (Yanaka et al., GeBNLP 2025; not shipped: its redistribution
is prohibited).  Answers come from each option's likelihood (base models,
deterministic) or from a generated index under Nejumi LLM Leaderboard 4's
prompt (chat models, through any backend); the scores are BBQ's, computed as
Nejumi computes them, per category and pooled, each with a 95% interval by a
bootstrap over templates.  Everything it needs is in this folder.
"""
