rule segment:
    input:
        responses=INPUTS["responses"] or [],
        queries=INPUTS["queries"],
    output:
        "results/segment/responses.parquet",
    log:
        "results/logs/segment.log",
    conda:
        ENV
    params:
        max_tokens=config["segment"]["max_tokens"],
        on_unknown_query=config["validation"]["unknown_queries"],
    shell:
        "python -m examflow segment --responses {input.responses} --queries {input.queries}"
        " --max-tokens {params.max_tokens} --on-unknown-query {params.on_unknown_query}"
        " --out {output} 2> {log}"
