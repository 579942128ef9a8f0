rule summary:
    input:
        grades=expand(rules.merge_grades.output, method=METHODS),
        flagged=rules.pool.output.flagged,
        evaluations=expand(rules.evaluate.output, method=METHODS),
    output:
        summary=results("summary.md"),
        provenance=results("provenance.json"),
    log:
        logs("summary.log"),
    conda:
        ENV
    params:
        grades=lambda wildcards, input: cli_options(grades=input.grades),
        config_digest=config_digest(config),
        results=lambda wildcards, output: Path(output.summary).parent,
    shell:
        "python -m examflow summary {params.grades} --flagged {input.flagged}"
        " --config-digest {params.config_digest} --results {params.results}"
        " --out-summary {output.summary} --out-provenance {output.provenance} 2> {log}"
