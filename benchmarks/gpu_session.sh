#!/usr/bin/env bash
# Issue 21's GPU measurements in one call of a lent GPU machine (one H100 or H200, its own python3 with
# torch and transformers; nothing to install): flan-t5-large configuration, bf16, 4,000 prompts of
# ~195 tokens, each decoding compiled and eager in the same run. Logs go to $OUT (or /tmp/gpu-session).
#     bash benchmarks/gpu_session.sh COMMIT [SECONDS]
# With wheels of ctranslate2 in .whl/, it also says whether CTranslate2 sees the GPU.
set -uo pipefail
out=${OUT:-/tmp/gpu-session}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
{
    echo "commit ${1:-unknown}, $(date -u +%FT%TZ)"
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm --format=csv
    python3 -c "import sys, torch, transformers; print(sys.version.split()[0], torch.__version__, transformers.__version__)"
} 2>&1 | tee "$out/machine.txt"
timeout "${2:-480}" python3 benchmarks/grading_throughput.py --model large --device cuda --dtype bfloat16 \
    --prompts 4000 --batch-size 256 --fast-batch-size 1024 --skip-reference --greedy \
    --compile always --eager-baseline 2>&1 | grep --line-buffered -v "Loading weights" | tee "$out/grading.txt"
echo "benchmark exit status: ${PIPESTATUS[0]}" | tee -a "$out/grading.txt"
if compgen -G ".whl/ctranslate2-*.whl" >/dev/null; then
    python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl &&
        PYTHONPATH=/tmp/site python3 -c "import ctranslate2 as c; print('ctranslate2', c.__version__, 'CUDA devices:',
c.get_cuda_device_count(), c.get_supported_compute_types('cuda'))" 2>&1 | tail -3 | tee "$out/ctranslate2.txt"
fi
