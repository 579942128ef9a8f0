rule evaluate:
    input:
        grades=results("grades/{method}.parquet"),
        rankings=rules.pool.output.rankings,
        passages=rules.pool.output.passages,
        judgments=rules.pool.output.judgments,
        questions=expand(rules.bank_shard.output, shard=SHARDS),
        official=INPUTS["official_leaderboard"] or [],
        gold_articles=INPUTS["gold_articles"] or [],
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
        references=lambda wildcards, input: cli_options(
            official=input.official or None, gold_articles=input.gold_articles or None
        ),
        settings=cli_options(
            **config["evaluation"], diagnostics_tau=config["report"]["tau"]
        ),
        baselines=BASELINES,
        on_unknown_run=config["validation"]["leaderboard_runs"],
        pool=lambda wildcards, input: Path(input.rankings).parent,
        out=lambda wildcards, output: Path(output.leaderboard).parent,
    shell:
        "python -m examflow evaluate --grades {input.grades} --pool {params.pool}"
        " --questions {input.questions} {params.references} {params.settings}"
        " --on-unknown-run {params.on_unknown_run} --baselines {params.baselines}"
        " --out {params.out} 2> {log}"
