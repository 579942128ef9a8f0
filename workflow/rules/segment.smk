rule segment:
    input:
        responses=INPUTS["responses"] or [],
        queries=input_file("queries"),
    output:
        "results/segment/responses.parquet",
    log:
        "results/logs/segment.log",
    conda:
        ENV
    params:
        queries=lambda wildcards, input: source(input, "queries"),
        max_tokens=config["segment"]["max_tokens"],
        on_unknown_query=config["validation"]["unknown_queries"],
    shell:
        "python -m examflow segment --responses {input.responses} --queries {params.queries}"
        " --max-tokens {params.max_tokens} --on-unknown-query {params.on_unknown_query}"
        " --out {output} 2> {log}"
