rule summary:
    input:
        grades=expand(rules.merge_grades.output, method=METHODS),
        flagged=rules.pool.output.flagged,
        leaderboards=expand(rules.evaluate.output.leaderboard, method=METHODS),
        nrp=results("nrp/per_system.tsv") if config["nrp"] else [],
    output:
        summary=results("summary.md"),
        page=results("summary.rst"),
        provenance=results("provenance.json"),
    log:
        logs("summary.log"),
    conda:
        ENV
    params:
        options=lambda wildcards, input: cli_options(
            grades=input.grades,
            eval=[Path(path).parent for path in input.leaderboards],
            nrp=input.nrp or None,
        ),
        tau=config["report"]["tau"],
        config_digest=config_digest(config),
        results=lambda wildcards, output: Path(output.summary).parent,
    shell:
        "python -m examflow summary {params.options} --flagged {input.flagged} --tau {params.tau}"
        " --config-digest {params.config_digest} --results {params.results}"
        " --out-summary {output.summary} --out-rst {output.page} --out-provenance {output.provenance} 2> {log}"
