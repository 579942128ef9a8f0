rule segment:
    input:
        responses=INPUTS["responses"] or [],
        gold_articles=INPUTS["gold_articles"] or [],
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
        texts=lambda wildcards, input: cli_options(
            responses=input.responses or None,
            gold_articles=input.gold_articles or None,
        ),
        queries=lambda wildcards, input: source(input, "queries"),
        max_tokens=config["segment"]["max_tokens"],
        on_unknown_query=config["validation"]["unknown_queries"],
    shell:
        "python -m examflow segment {params.texts} --queries {params.queries}"
        " --max-tokens {params.max_tokens} --on-unknown-query {params.on_unknown_query}"
        " --out {output} 2> {log}"
