# examflow: EXAM / EXAM++ answerability evaluation. Usage: README.md; config keys: config/README.md.

# The bundled demo, read only when no --configfile is given: a user's config is the whole
# truth, and every key it leaves out takes the schema's default (never the demo's value).
CONFIG_FILE = "config/config.yaml"


if not workflow.overwrite_configfiles:

    configfile: CONFIG_FILE


include: "workflow/rules/common.smk"


if EXAM:

    include: "workflow/rules/segment.smk"
    include: "workflow/rules/pool.smk"
    include: "workflow/rules/questions.smk"
    include: "workflow/rules/grade.smk"
    include: "workflow/rules/evaluate.smk"
    include: "workflow/rules/report.smk"


if NRP:

    include: "workflow/rules/nrp.smk"


include: "workflow/rules/summary.smk"


# The report's first page is the run's summary (`snakemake --report` after a run).
report: str(Path(rules.summary.output.page).resolve())


# Cheap steps run where snakemake runs, not as cluster jobs (more in each rules file).
localrules:
    all,
    summary,


wildcard_constraints:
    shard=r"[A-Za-z0-9_-]+",
    method=r"[A-Za-z0-9_-]+",


# Every table and figure a person reads is a target, so that a run whose job was killed
# rebuilds what it lost instead of reporting nothing to be done.
EXAM_TARGETS = (
    [
        rules.pool.output,
        expand(rules.bank_shard.output, shard=SHARDS),
        literal(BANK) if GENERATE_BANK else [],
        rules.plan.output if METHODS else [],
        expand(rules.merge_grades.output, method=METHODS),
        expand(rules.evaluate.output, method=METHODS),
        expand(rules.report_method.output, method=METHODS),
    ]
    if EXAM
    else []
)
NRP_TARGETS = [rules.nrp.output, rules.report_nrp.output] if NRP else []


rule all:
    input:
        EXAM_TARGETS,
        NRP_TARGETS,
        rules.summary.output,


onstart:
    # Snakemake locks the working directory; two runs from two directories on one results
    # folder would overwrite each other's logs and tables.
    checked(lock_results, RESULTS, CONFIG_FILES)


onsuccess:
    # A target such as `plan` stops before the summary: point only to what is there.
    if Path(rules.summary.output.summary).exists():
        print(
            f"examflow: done. Summary: {rules.summary.output.summary}; the report: "
            f"{report_command(f'{RESULTS}/report.html', USER_CONFIG_FILES)}; "
            f"all outputs under {RESULTS}/"
        )
    else:
        print(f"examflow: done; outputs under {RESULTS}/")
