rule segment:
    input:
        responses=input_file("responses"),
        gold_articles=input_file("gold_articles"),
        queries=input_file("queries"),
    output:
        results("segment/responses.parquet"),
    log:
        logs("segment.log"),
    conda:
        ENV
    resources:
        mem_mb=2000,
        runtime=30,
    params:
        contents=contents(configured("responses", "gold_articles", "queries")),
        # option words (cli_options), each quoted by :q
        texts=lambda wildcards, input: input_files(
            input, "responses", "gold_articles", "queries"
        ),
        dataset=lambda wildcards: irds_sources("queries"),
        max_tokens=config["segment"]["max_tokens"],
        on_unknown_query=config["validation"]["unknown_queries"],
    shell:
        (
            "python -m examflow segment {params.texts:q} {params.dataset:q}"
            " --max-tokens {params.max_tokens:q} --on-unknown-query {params.on_unknown_query:q}"
            " --out {output:q} 2> {log:q}"
        )
