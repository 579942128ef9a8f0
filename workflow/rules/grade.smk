# A bank edit rewrites only the edited queries' bank shards, so only their grading reruns (of the
# methods that read a bank: one that grades against the query has no bank shard among its inputs).
# A new pool (runs added) rewrites every pool shard and reruns every grading job, but the
# grade cache answers all pairs graded before: only new passages reach the model.
rule grade:
    input:
        passages=rules.pool_shard.output.passages,
        queries=rules.pool_shard.output.queries,
        questions=branch(reads_bank, then=rules.bank_shard.output[0]),
    output:
        results("grades/{method}/{shard}.parquet"),
    log:
        logs("grade/{method}/{shard}.log"),
    conda:
        ENV
    threads: method_resource("threads")
    resources:
        gpu=method_gpus,
        mem_mb=method_resource("mem_mb"),
        runtime=grade_runtime,
    params:
        method=grading_json,  # the method as JSON (method_json)
        cache=lambda wildcards: config["cache_dir"],
        flush_every=config["grading"]["flush_every"],
        max_error_rate=config["grading"]["max_error_rate"],
        progress=progress_file,
        weights=model_weights,  # not in the command: its change reruns the job (--rerun-triggers params)
        prompts=prompts_read,  # the same for the prompts' texts as the model reads them
        gpus=gpu_visibility,  # `env`'s words: CUDA_VISIBLE_DEVICES= for a job that holds no GPU, or none
        bank=bank_option,  # `--questions` and the shard's bank, or nothing (reads_bank)
    shell:
        (
            "env {params.gpus:q} python -m examflow grade --method {params.method:q} --passages {input.passages:q}"
            " --queries {input.queries:q} {params.bank:q} --shard {wildcards.shard:q}"
            " --cache-dir {params.cache:q} --flush-every {params.flush_every:q}"
            " --max-error-rate {params.max_error_rate:q} --progress {params.progress:q}"
            " --out {output:q} 2> {log:q}"
        )


localrules:
    merge_grades,
    plan,


rule merge_grades:
    input:
        shards=method_grades,
        passages=rules.pool.output.passages,  # whose gold articles an embedding method's quantiles leave out
        # What the grade jobs read: a shard's job that failed after a bank edit, or a pool shard's job killed after
        # a new run file, left the merged table older than what it was graded from, so a rerun of a target short of
        # `all` (which names every shard) rebuilds the missing shard too (new params rerun it by themselves:
        # Snakemake keeps the params of a table it deleted)
        pools=method_pools,
        banks=bank_shards,
    output:
        results("grades/{method}.parquet"),
    log:
        logs("grade/{method}.log"),
    conda:
        ENV
    resources:
        mem_mb=lambda wildcards, input: 1000 + 20 * size_mb(wildcards, input.shards),
        runtime=30,
    params:
        method=method_json,  # the method as JSON
    shell:
        (
            "python -m examflow merge-grades --method {params.method:q} --passages {input.passages:q}"
            " --out {output:q} {input.shards:q} 2> {log:q}"
        )


# Before grading: what each method will grade and cost. The target goes before --configfile, which
# would read it as a second config file: `snakemake --cores all plan --configfile YOURS.yaml`.
# In a full run it goes first by priority, not as an input of `grade`: Snakemake skips the params
# check of every job downstream of one that reruns when the link is ancient (a model change was
# lost). Grading may then start beside it, so its counts are a log of the run, not a result.
rule plan:
    input:
        passages=rules.pool.output.passages,
        queries=rules.pool.output.queries,
        questions=expand(rules.bank_shard.output, shard=SHARDS),
    output:
        logs("plan.tsv"),
    log:
        logs("plan.log"),
    priority: 100
    conda:
        ENV
    params:
        pool=lambda wildcards, input: Path(input.passages).parent,
        # each method as JSON, one word a method
        methods=lambda wildcards: [
            json.dumps(method.settings) for method in METHODS.values()
        ],
        cache=lambda wildcards: config["cache_dir"],
        shards=SHARD_COUNT,
        answers_follow=cache_keys,  # not in the command: its change makes a new plan (--rerun-triggers params)
    shell:
        (
            "python -m examflow plan --pool {params.pool:q} --questions {input.questions:q}"
            " --method {params.methods:q} --cache-dir {params.cache:q} --shards {params.shards:q}"
            " --out {output:q} 2> {log:q}"
        )
