"""The report: figures, pages, and what the workflow shows with `snakemake --report`."""
