localrules:
    official_leaderboard,


# Without an official leaderboard file: every run's mean of evaluation.official_measure on the qrels.
rule official_leaderboard:
    input:
        rankings=rules.pool.output.rankings,
        judgments=rules.pool.output.judgments,
        runs=[literal(run) for run in RUN_FILES],
    output:
        results("official/leaderboard.tsv"),
    log:
        logs("official.log"),
    conda:
        ENV
    params:
        pool=lambda wildcards, input: Path(input.rankings).parent,
        # shlex-quoted options (cli_options): no :q in the shell line
        settings=lambda wildcards: cli_options(
            measure=config["evaluation"]["official_measure"],
            relevance_level=config["evaluation"]["min_relevant_judgment"],
        ),
    shell:
        (
            "python -m examflow official --pool {params.pool:q} --runs {input.runs:q} {params.settings}"  # params.settings: shlex-quoted already, no :q
            " --out {output:q} 2> {log:q}"
        )


rule evaluate:
    input:
        grades=results("grades/{method}.parquet"),
        rankings=rules.pool.output.rankings,
        passages=rules.pool.output.passages,
        judgments=rules.pool.output.judgments,
        questions=expand(rules.bank_shard.output, shard=SHARDS),
        official=official_input,
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
        # inputs and settings: shlex-quoted options (cli_options): no :q in the shell line
        inputs=lambda wildcards, input: cli_options(
            questions=input.questions,
            official=input.official or None,
            gold_articles=input.gold_articles or None,
        ),
        settings=lambda wildcards: cli_options(
            on_unknown_run=config["validation"]["leaderboard_runs"],
            baselines=BASELINES,
            facts=FACTS.names(),
            **{
                k: v
                for k, v in config["evaluation"].items()
                if k != "official_measure"
            },
            diagnostics_tau=config["report"]["tau"],
        ),
        pool=lambda wildcards, input: Path(input.rankings).parent,
        out=lambda wildcards, output: Path(output.leaderboard).parent,
    shell:
        (
            "python -m examflow evaluate --grades {input.grades:q} --pool {params.pool:q}"
            " {params.inputs} {params.settings} --out {params.out:q} 2> {log:q}"  # params.inputs, params.settings: shlex-quoted already, no :q
        )
