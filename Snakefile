# examflow: EXAM / EXAM++ answerability evaluation. Usage: README.md; config keys: config/README.md.


configfile: "config/config.yaml"


include: "workflow/rules/common.smk"
include: "workflow/rules/segment.smk"
include: "workflow/rules/pool.smk"


rule all:
    input:
        rules.pool.output,
