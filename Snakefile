# examflow: EXAM / EXAM++ answerability evaluation. Usage: README.md; config keys: config/README.md.

# The bundled demo, read only when no --configfile is given: a user's config is the whole
# truth, and every key it leaves out takes the schema's default (never the demo's value).
CONFIG_FILE = "config/config.yaml"


if not workflow.overwrite_configfiles:

    configfile: CONFIG_FILE


include: "workflow/rules/common.smk"
include: "workflow/rules/segment.smk"
include: "workflow/rules/pool.smk"
include: "workflow/rules/questions.smk"
include: "workflow/rules/grade.smk"
include: "workflow/rules/evaluate.smk"
include: "workflow/rules/summary.smk"
include: "workflow/rules/report.smk"


if config["nrp"]:

    include: "workflow/rules/nrp.smk"


# The report's first page is the run's summary (`snakemake --report` after a run).
report: str(Path(rules.summary.output.page).resolve())


# Cheap steps run where snakemake runs, not as cluster jobs.
localrules:
    all,
    plan,
    bank_shard,
    pool_shard,
    merge_grades,
    summary,
    report_method,


wildcard_constraints:
    shard=r"[A-Za-z0-9_-]+",
    method=r"[A-Za-z0-9_-]+",


rule all:
    input:
        rules.pool.output,
        expand(rules.bank_shard.output, shard=SHARDS),
        BANK if GENERATE_BANK else [],
        rules.plan.output if METHODS else [],
        expand(rules.merge_grades.output, method=METHODS),
        expand(rules.evaluate.output, method=METHODS),
        rules.summary.output,
        expand(rules.report_method.output, method=METHODS),
        rules.report_nrp.output if config["nrp"] else [],


onsuccess:
    # A target such as `plan` stops before the summary: point only to what is there.
    if Path(rules.summary.output.summary).exists():
        print(
            f"examflow: done. Summary: {rules.summary.output.summary}; the report: "
            f"snakemake --report {RESULTS}/report.html; all outputs under {RESULTS}/"
        )
    else:
        print(f"examflow: done; outputs under {RESULTS}/")
