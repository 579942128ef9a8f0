"""NRP, the normalised rank position of a generated answer among expert-judged documents
(Heineking et al., ECIR 2025; docs/methods.md §6): inputs, rankers, and the measure with its statistics."""
