# NRP (SPEC §6): generated answers ranked among expert-judged documents, next to EXAM.
rule nrp:
    input:
        queries=NRP["queries"],
        corpus=NRP["corpus"],
        answers=NRP["answers"],
        qrels=[d["qrels"] for d in NRP["dimensions"].values()],
        expert=NRP["expert"] or [],
        runs=[r["path"] for r in NRP["rankers"] if r["kind"] == "run"],
    output:
        [results(f"nrp/{table}.tsv") for table in nrp_tables()],
    log:
        logs("nrp.log"),
    conda:
        ENV
    resources:
        gpu=int(any(r["kind"] == "monot5" for r in NRP["rankers"])),
        mem_mb=8000,
        runtime=120,
    params:
        options=nrp_options,
        wilcoxon=" ".join(
            f"--wilcoxon {' '.join(map(shlex.quote, w))}" for w in NRP["wilcoxon"]
        ),
        denominator=NRP["denominator"],
        cache=config["cache_dir"],
        on_unknown_query=config["validation"]["unknown_queries"],
        on_missing_passage=config["validation"]["missing_passages"],
        out=lambda wildcards, output: Path(output[0]).parent,
    shell:
        "python -m examflow nrp --queries {input.queries} --corpus {input.corpus} --answers {input.answers}"
        " {params.options} {params.wilcoxon} --denominator {params.denominator} --cache-dir {params.cache}"
        " --on-unknown-query {params.on_unknown_query} --on-missing-passage {params.on_missing_passage}"
        " --out {params.out} 2> {log}"


localrules:
    report_nrp,


rule report_nrp:
    input:
        rules.nrp.output,
    output:
        figure=report(
            results("report/nrp/nrp.png"),
            caption="../report/nrp.rst",
            category="NRP",
            labels={"item": "figure"},
        ),
        page=report(
            results("report/nrp/nrp.html"),
            caption="../report/nrp_table.rst",
            category="NRP",
            labels={"item": "tables"},
        ),
    log:
        logs("report/nrp.log"),
    conda:
        ENV
    params:
        tables=lambda wildcards, input: Path(input[0]).parent,
        out=lambda wildcards, output: Path(output.figure).parent,
    shell:
        "python -m examflow report --nrp {params.tables} --out {params.out} 2> {log}"
