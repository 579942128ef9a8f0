localrules:
    official_leaderboard,


# Without an official leaderboard file: every run's mean of evaluation.official_measure on the qrels.
rule official_leaderboard:
    input:
        rankings=rules.pool.output.rankings,
        judgments=rules.pool.output.judgments,
        runs=[given(run) for run in RUN_FILES],
    output:
        results("official/leaderboard.tsv"),
    log:
        logs("official.log"),
    conda:
        ENV
    params:
        contents=contents(RUN_FILES),
        pool=lambda wildcards, input: Path(input.rankings).parent,
        # option words (cli_options), each quoted by :q in the shell line
        settings=lambda wildcards: cli_options(**official_computation()),
    shell:
        (
            "python -m examflow official --pool {params.pool:q} --runs {input.runs:q} {params.settings:q}"
            " --out {output:q} 2> {log:q}"
        )


rule evaluate:
    input:
        grades=rules.merge_grades.output[0],
        rankings=rules.pool.output.rankings,
        passages=rules.pool.output.passages,
        judgments=rules.pool.output.judgments,
        questions=bank_shards,
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
        contents=contents(configured("official_leaderboard", "gold_articles")),
        # option words (cli_options), each quoted by :q in the shell line
        inputs=lambda wildcards, input: cli_options(
            questions=input.questions,
            official=input.official or None,
            gold_articles=input.gold_articles or None,
        ),
        settings=lambda wildcards: cli_options(
            on_unknown_run=config["validation"]["leaderboard_runs"],
            baselines=BASELINES,
            grading_settings=grading_settings(wildcards),
            **{
                k: v
                for k, v in config["evaluation"].items()
                if k != "official_measure"
            },
            diagnostics_tau=config["report"]["method_tau"][wildcards.method],
        ),
        facts=FACTS.names(),  # given even when none holds: `--facts` alone says so
        pool=lambda wildcards, input: Path(input.rankings).parent,
        out=lambda wildcards, output: Path(output.leaderboard).parent,
    shell:
        (
            "python -m examflow evaluate --grades {input.grades:q} --pool {params.pool:q}"
            " {params.inputs:q} {params.settings:q} --facts {params.facts:q} --out {params.out:q} 2> {log:q}"
        )


if JUDGES:

    localrules:
        report_judges,

    # Every method's EXAM-Qrels and each outside label set against the official qrels (docs/judges.md).
    rule judges:
        input:
            runs=[given(run) for run in RUN_FILES],
            qrels=input_file("qrels"),
            queries=input_file("queries"),
            official=[] if OFFICIAL_FROM_QRELS else official_input,
            # generated responses' runs: left out of the leaderboards given (the judges rank passages)
            responses=[given(path) for path in JUDGES_RESPONSES],
            methods=[literal(method_qrels(method)) for method in METHODS],
            outside=[given(path) for path in OUTSIDE_LABELS.values()],
            leaderboards=[
                given(path) for path in config["judges"]["leaderboards"].values()
            ],
        output:
            **judges_outputs(),
        log:
            logs("judges.log"),
        conda:
            ENV
        resources:
            runtime=60,
        params:
            contents=contents(
                RUN_FILES,
                configured("queries", "qrels", "official_leaderboard"),
                JUDGES_RESPONSES,
                OUTSIDE_LABELS.values(),
                config["judges"]["leaderboards"].values(),
            ),
            # option words (cli_options), each quoted by :q in the shell line
            # the queries, against which every label set's query ids are checked; the responses
            files=lambda wildcards, input: input_files(input, "queries", "responses"),
            datasets=lambda wildcards: irds_sources("queries"),
            labels=judges_labels,
            official=judges_official,
            settings=judges_settings,
            out=lambda wildcards, output: Path(output.leaderboards).parent,
        shell:
            (
                "python -m examflow compare-judges --runs {input.runs:q} --official-qrels {input.qrels:q}"
                " {params.files:q} {params.datasets:q} {params.official:q} {params.labels:q} {params.settings:q}"
                " --out {params.out:q} 2> {log:q}"
            )

    rule report_judges:
        input:
            rules.judges.output,
        output:
            **report_files(JUDGES_REPORT, "judges"),
        log:
            logs("report/judges.log"),
        conda:
            ENV
        params:
            tables=lambda wildcards, input: Path(input[0]).parent,
            out=lambda wildcards, output: Path(output.judges_png).parent,
        shell:
            "python -m examflow report --judges {params.tables:q} --out {params.out:q} 2> {log:q}"
