"""From grades to scores, and from scores to the evidence that they are right (SPEC §4–§5)."""
