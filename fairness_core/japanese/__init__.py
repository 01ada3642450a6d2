"""Japanese text as the evaluations compare it: NFKC, unidic morphemes and lemma-sequence lookup (shared by all)."""
