#!/usr/bin/env bash
# Issue 21's GPU measurements on a lent GPU machine (one H100 or H200, its own python3 with torch and
# transformers; nothing to install): flan-t5-large configuration, bf16, 4,000 prompts of ~195 tokens.
#     bash benchmarks/gpu_session.sh COMMIT STEP [SECONDS [MORE OPTIONS OF grading_throughput.py]]
# STEP (each fits one call of at most 10 minutes; logs go to $OUT, else /tmp/gpu-session):
#   eager   every decoding eager (`compile: never`), busy share and MFU;
#   fast    `fast` compiled, its compile timed, then eager in the same run, answers compared;
#   search  `beam` and `greedy` compiled, likewise;
#   static  `beam` and `greedy` eager, then through the search of fixed shapes with CUDA graphs, answers compared;
#   ct2     ct2_seq2seq beside the eager torch path (needs CTranslate2's wheel in .whl/, carried).
set -uo pipefail
out=${OUT:-/tmp/gpu-session}
step=${2:?STEP: eager, fast, search, static or ct2}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
{
    echo "commit ${1:-unknown}, step $step, $(date -u +%FT%TZ)"
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv
    python3 -c "import sys, torch, transformers; print(sys.version.split()[0], torch.__version__, transformers.__version__)"
} 2>&1 | tee "$out/machine.txt"
common=(--model large --device cuda --dtype bfloat16 --prompts 4000 --batch-size 256 --fast-batch-size 1024
    --skip-reference)
case $step in
eager) options=(--greedy --compile never) ;;
fast) options=(--skip beam --compile always --eager-baseline) ;;
search) options=(--skip fast --greedy --compile always --eager-baseline) ;;
static) options=(--skip fast --greedy --compile never --static-search) ;;
ct2)
    python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/ctranslate2-*.whl || exit
    export PYTHONPATH=/tmp/site
    options=(--greedy --compile never --ctranslate2)
    ;;
*) echo "unknown STEP $step" >&2 && exit 2 ;;
esac
# the later of repeated options wins: MORE OPTIONS (say --prompts 2000) override the step's
timeout "${3:-540}" python3 benchmarks/grading_throughput.py "${common[@]}" "${options[@]}" "${@:4}" 2>&1 |
    grep --line-buffered -Ev 'Loading weights|Writing model shards|^ *warnings\.warn\(' | tee "$out/$step.txt"
status=${PIPESTATUS[0]}
echo "benchmark exit status: $status" | tee -a "$out/$step.txt"
exit "$status"
