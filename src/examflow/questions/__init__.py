"""Question banks (SPEC §2): formats, generation, sharding and diffs."""
