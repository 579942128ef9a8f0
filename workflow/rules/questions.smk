if GENERATED == "question":

    localrules:
        questions,

    checkpoint questions:
        input:
            queries=input_file("queries"),
        output:
            literal(BANK),
        log:
            logs("questions.log"),
        conda:
            ENV
        params:
            contents=contents(configured("queries")),
            # option words (cli_options), each quoted by :q in the shell line
            queries=lambda wildcards, input: input_files(input, "queries"),
            dataset=lambda wildcards: irds_sources("queries"),
            llm=lambda wildcards: cli_options(**config["questions"]["llm"]),
            format=config["questions"]["format"],
            attempts=config["questions"]["attempts"],
            cache=lambda wildcards: f"{config['cache_dir']}/llm",
        shell:
            (
                "python -m examflow questions {params.queries:q} {params.dataset:q} {params.llm:q}"
                " --format {params.format:q} --attempts {params.attempts:q}"
                " --cache-dir {params.cache:q} --out {output:q} 2> {log:q}"
            )

elif GENERATED == "nugget":

    localrules:
        questions,

    # AutoNuggetizer's creator and scorer over the pool's documents (docs/banks.md)
    checkpoint questions:
        input:
            passages=pool_outputs()["passages"],
            queries=pool_outputs()["queries"],
            judgments=pool_outputs()["judgments"],
        output:
            literal(BANK),
        log:
            logs("questions.log"),
        conda:
            ENV
        params:
            # option words (cli_options), each quoted by :q in the shell line
            llm=lambda wildcards: cli_options(**config["questions"]["llm"]),
            documents=config["questions"]["documents"],
            attempts=config["questions"]["attempts"],
            cache=lambda wildcards: f"{config['cache_dir']}/llm",
            pool=lambda wildcards, input: Path(input.passages).parent,
        shell:
            (
                "python -m examflow nuggets --pool {params.pool:q} {params.llm:q}"
                " --documents {params.documents:q} --attempts {params.attempts:q}"
                " --cache-dir {params.cache:q} --out {output:q} 2> {log:q}"
            )


localrules:
    bank_shard,


# The queries tell which facet ids are subtopics: questions for no query or subtopic are left out.
rule bank_shard:
    input:
        bank=bank_input,
        queries=input_file("queries"),
    output:
        results("bank/{shard}.parquet"),
    log:
        logs("bank/{shard}.log"),
    # every shard before any grading job: the plan, which needs them all, then goes first (priority 100 too)
    priority: 100
    conda:
        ENV
    params:
        digest=shard_digest,
        # Each table names the buckets that hold questions (evaluate checks that none is left out): where that
        # set changes (a query's last question deleted), every table is written again, not its bucket's alone.
        buckets=holding_buckets,
        contents=contents(configured("queries")),
        bank=lambda wildcards, input: input_files(input, "bank"),
        shards=SHARD_COUNT,
        # Of the configuration, not of `input`: an ir_datasets id that changes must rerun the job.
        queries=lambda wildcards: INPUTS["queries"],
        on_unknown_query=config["validation"]["unknown_queries"],
    shell:
        "python -m examflow bank-shard {params.bank:q} --queries {params.queries:q}"
        " --on-unknown-query {params.on_unknown_query:q}"
        " --shard {wildcards.shard:q} --shards {params.shards:q} --out {output:q} 2> {log:q}"
