if GENERATE_BANK:

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
            queries=lambda wildcards, input: cli_options(
                queries=source(input, "queries")
            ),
            llm=lambda wildcards: cli_options(**config["questions"]["llm"]),
            format=config["questions"]["format"],
            attempts=config["questions"]["attempts"],
            cache=lambda wildcards: f"{config['cache_dir']}/llm",
        shell:
            "python -m examflow questions {params.queries} {params.llm}"
            " --format {params.format} --attempts {params.attempts}"
            " --cache-dir {params.cache:q} --out {output:q} 2> {log:q}"


localrules:
    bank_shard,


rule bank_shard:
    input:
        bank=bank_input,
    output:
        results("bank/{shard}.parquet"),
    log:
        logs("bank/{shard}.log"),
    conda:
        ENV
    params:
        digest=shard_digest,
        shards=SHARD_COUNT,
    shell:
        "python -m examflow bank-shard --bank {input.bank:q} --shard {wildcards.shard} --shards {params.shards}"
        " --out {output:q} 2> {log:q}"
