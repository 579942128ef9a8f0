rule summary:
    input:
        grades=expand(rules.merge_grades.output, method=METHODS) if EXAM else [],
        flagged=rules.pool.output.flagged if EXAM else [],
        dropped=rules.pool.output.dropped if EXAM else [],
        # its items' digest and a generated bank's generator go into provenance.json, where a method graded it
        bank=(
            bank_input
            if EXAM and any(m.entry.reads_bank for m in METHODS.values())
            else []
        ),
        leaderboards=(
            expand(rules.evaluate.output.leaderboard, method=METHODS) if EXAM else []
        ),
        nrp=rules.nrp.output.per_system if NRP else [],
        official=official_input if EXAM else [],
        judges=rules.judges.output.agreement if JUDGES else [],
        # the report's figures, embedded as they are (drawn again, each took a second and a half)
        figures=(
            expand(rules.report_method.output.leaderboard_png, method=METHODS)
            if EXAM
            else []
        ),
    output:
        summary=results("summary.md"),
        page=results("summary.rst"),
        provenance=results("provenance.json"),
    log:
        logs("summary.log"),
    conda:
        ENV
    params:
        contents=contents(configured("official_leaderboard")),
        # option words (cli_options), each quoted by :q in the shell line
        inputs=lambda wildcards, input: cli_options(
            grades=input.grades,
            flagged=input.flagged or None,
            dropped=input.dropped or None,
            bank=input.bank or None,
            eval=[Path(path).parent for path in input.leaderboards],
            nrp=input.nrp or None,
            official=input.official or None,
            judges=input.judges or None,
            figures=input.figures or None,
        ),
        settings=lambda wildcards: cli_options(
            method_tau=[
                f"{m}={tau}" for m, tau in config["report"]["method_tau"].items()
            ],
            measures=config["evaluation"]["measures"],
            **official_computation("official_"),
            config_digest=config_digest(config),
            configfile=NAMED_CONFIG_FILES,
            config_setting=CONFIG_SETTINGS,
            snakefile=SNAKEFILE,
        ),
        results=lambda wildcards, output: Path(output.summary).parent,
    shell:
        (
            "python -m examflow summary {params.inputs:q} {params.settings:q} --results {params.results:q}"
            " --out-summary {output.summary:q} --out-rst {output.page:q}"
            " --out-provenance {output.provenance:q} 2> {log:q}"
        )
