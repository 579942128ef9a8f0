"""From grades to scores, and from scores to the evidence that they are right (docs/methods.md §4–§5)."""
