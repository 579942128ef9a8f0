rule pool:
    input:
        unpack(pool_inputs),
    output:
        **pool_outputs(),
    log:
        logs("pool.log"),
    conda:
        ENV
    resources:
        mem_mb=8000,
        runtime=60,
    params:
        contents=contents(configured("queries", "qrels", "corpus"), RUN_FILES),
        # option words (cli_options), each quoted by :q in the shell line
        files=lambda wildcards, input: input_files(input, *POOL_SOURCES),
        datasets=lambda wildcards: irds_sources(*POOL_SOURCES),
        depth=config["pool"]["depth"],
        on_missing_passage=config["validation"]["missing_passages"],
        on_unknown_query=config["validation"]["unknown_queries"],
        relevance_range=cli_options(  # option words (cli_options), each quoted by :q
            relevance_range=config["validation"]["relevance_range"]
        ),
        out=lambda wildcards, output: Path(output.passages).parent,
    shell:
        (
            "python -m examflow pool {params.files:q} {params.datasets:q} --depth {params.depth:q}"
            " --on-missing-passage {params.on_missing_passage:q}"
            " --on-unknown-query {params.on_unknown_query:q} {params.relevance_range:q}"
            " --out {params.out:q} 2> {log:q}"
        )


localrules:
    pool_shard,


rule pool_shard:
    input:
        passages=rules.pool.output.passages,
        queries=rules.pool.output.queries,
    output:
        passages=results("pool/shards/{shard}.passages.parquet"),
        queries=results("pool/shards/{shard}.queries.parquet"),
    log:
        logs("pool/{shard}.log"),
    conda:
        ENV
    params:
        shards=SHARD_COUNT,
    shell:
        "python -m examflow pool-shard --passages {input.passages:q} --queries {input.queries:q}"
        " --shard {wildcards.shard:q} --shards {params.shards:q}"
        " --out-passages {output.passages:q} --out-queries {output.queries:q} 2> {log:q}"
