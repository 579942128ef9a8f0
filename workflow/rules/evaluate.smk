rule evaluate:
    input:
        grades=results("grades/{method}.parquet"),
        rankings=rules.pool.output.rankings,
        passages=rules.pool.output.passages,
        judgments=rules.pool.output.judgments,
        questions=expand(rules.bank_shard.output, shard=SHARDS),
        official=input_file("official_leaderboard"),
        gold_articles=input_file("gold_articles"),
    output:
        **evaluation_outputs(),
    log:
        logs("evaluate/{method}.log"),
    conda:
        ENV
    resources:
        mem_mb=lambda wildcards, input: 2000 + 40 * size_mb(wildcards, input.grades),
        runtime=60,
    params:
        inputs=lambda wildcards, input: cli_options(
            questions=input.questions,
            official=input.official or None,
            gold_articles=input.gold_articles or None,
        ),
        settings=lambda wildcards: cli_options(
            on_unknown_run=config["validation"]["leaderboard_runs"],
            baselines=BASELINES,
            facts=FACTS.names(),
            **config["evaluation"],
            diagnostics_tau=config["report"]["tau"],
        ),
        pool=lambda wildcards, input: Path(input.rankings).parent,
        out=lambda wildcards, output: Path(output.leaderboard).parent,
    shell:
        "python -m examflow evaluate --grades {input.grades:q} --pool {params.pool:q}"
        " {params.inputs} {params.settings} --out {params.out:q} 2> {log:q}"
