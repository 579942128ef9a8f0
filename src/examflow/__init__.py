"""examflow: EXAM / EXAM++ answerability evaluation as a Snakemake workflow."""

__version__ = "0.1.0"
