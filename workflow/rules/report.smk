localrules:
    report_method,


# The figures and pages of `snakemake --report`, per method; the summary is its first page.
rule report_method:
    input:
        unpack(report_inputs),
    output:
        **report_outputs(),
    log:
        logs("report/{method}.log"),
    conda:
        ENV
    params:
        contents=contents(configured("official_leaderboard")),
        # option words (cli_options), each quoted by :q in the shell line
        inputs=report_inputs_options,
        settings=report_settings,
        facts=FACTS.names(),  # given even when none holds: `--facts` alone says so
        out=lambda wildcards, output: Path(output.leaderboard_png).parent,
    shell:
        (
            "python -m examflow report --method {wildcards.method:q} --grades {input.grades:q}"
            " {params.inputs:q} {params.settings:q} --facts {params.facts:q} --out {params.out:q} 2> {log:q}"
        )
