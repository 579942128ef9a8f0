"""Question banks (docs/methods.md §2): formats, generation, sharding and diffs."""
