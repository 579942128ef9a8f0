if GENERATE_BANK:

    localrules:
        questions,

    checkpoint questions:
        input:
            queries=input_file("queries"),
        output:
            BANK,
        log:
            logs("questions.log"),
        conda:
            ENV
        params:
            queries=lambda wildcards, input: source(input, "queries"),
            llm=cli_options(**config["questions"]["llm"]),
            format=config["questions"]["format"],
            attempts=config["questions"]["attempts"],
            cache=f"{config['cache_dir']}/llm",
        shell:
            "python -m examflow questions --queries {params.queries} {params.llm}"
            " --format {params.format} --attempts {params.attempts}"
            " --cache-dir {params.cache} --out {output} 2> {log}"


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
        "python -m examflow bank-shard --bank {input.bank} --shard {wildcards.shard} --shards {params.shards}"
        " --out {output} 2> {log}"
