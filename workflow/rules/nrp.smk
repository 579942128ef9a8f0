# NRP (docs/methods.md §6): generated answers ranked among expert-judged documents, next to EXAM or alone.
rule nrp:
    input:
        queries=given(NRP["queries"]),
        corpus=given(NRP["corpus"]) if NRP["corpus"] else [],
        answers=given(NRP["answers"]),
        qrels=[given(d["qrels"]) for d in NRP["dimensions"].values()],
        expert=given(NRP["expert"]) if NRP["expert"] else [],
        runs=[given(path) for path in ranker_files(NRP["rankers"])],
    output:
        **nrp_outputs(),
    log:
        logs("nrp.log"),
    conda:
        ENV
    resources:
        gpu=ranker_gpus(NRP["rankers"]),
        mem_mb=8000,
        runtime=120,
    params:
        contents=contents(nrp_files()),
        # option words (cli_options), each quoted by :q in the shell line
        inputs=nrp_inputs,
        settings=nrp_settings,
        out=lambda wildcards, output: Path(output.per_answer).parent,
    shell:
        (
            "python -m examflow nrp --queries {input.queries:q} --answers {input.answers:q}"
            " {params.inputs:q} {params.settings:q} --out {params.out:q} 2> {log:q}"
        )


localrules:
    report_nrp,


rule report_nrp:
    input:
        rules.nrp.output,
    output:
        **report_files(NRP_REPORT, "nrp"),
    log:
        logs("report/nrp.log"),
    conda:
        ENV
    params:
        tables=lambda wildcards, input: Path(input[0]).parent,
        facts=FACTS.names(),  # given even when none holds: `--facts` alone says so
        out=lambda wildcards, output: Path(output.nrp_png).parent,
    shell:
        (
            "python -m examflow report --nrp {params.tables:q} --facts {params.facts:q}"
            " --out {params.out:q} 2> {log:q}"
        )


if not EXAM:

    # `snakemake plan`, the step the README runs before any configuration, on one of NRP alone: no grading
    # to count (its rankers score the judged documents in the NRP job).
    rule plan:
        log:
            logs("plan.log"),
        localrule: True
        conda:
            ENV
        params:
            # the line of a step done, as every examflow command's log ends (a failed run names the others)
            done=DONE,
        shell:
            "(echo 'examflow: nothing to grade: this configuration computes NRP alone'; echo {params.done:q})"
            " | tee {log:q} >&2"
