#!/usr/bin/env bash
# The paths the project's CPU machine cannot run, checked on a GPU machine in one short script:
#   1. GRPO in bf16 on CUDA: the demo recipe with a reference model (beta > 0) and dynamic sampling (refill),
#      then the doctor on the run;
#   2. LoRA (TRL's use_peft) in bf16 on CUDA;
#   3. the doctor's speed on long logs (benchmarks/doctor_speed.py) on that machine's idle CPUs.
#
#   bash benchmarks/gpu_check.sh OUT_DIR
#
# Wheels of the dependencies the machine lacks can sit in .whl/ (installed into /tmp/site first); the package
# runs from src/ (no install). Each step's output goes to OUT_DIR; a failing step does not stop the next.
set -uo pipefail
OUT_DIR=${1:-/tmp/gpu-check}
mkdir -p "$OUT_DIR"
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    || { echo "wheel install failed"; exit 1; }
  export PYTHONPATH=/tmp/site
fi
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}" HF_HUB_OFFLINE=1 PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false
RUNS=/tmp/gpu-check-runs
rm -rf "$RUNS"

{
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
  python3 -c 'import sys, torch, transformers, trl, accelerate
print("python", sys.version.split()[0], "torch", torch.__version__, "transformers", transformers.__version__,
      "trl", trl.__version__, "accelerate", accelerate.__version__, "cuda", torch.cuda.is_available())'
  nproc
} 2>&1 | tee "$OUT_DIR/machine.txt"

step() {  # step NAME COMMAND...: run, log, record the exit code
  local name=$1; shift
  echo "== $name: $*" | tee "$OUT_DIR/$name.txt"
  local start=$SECONDS
  "$@" 2>&1 | tee -a "$OUT_DIR/$name.txt"
  local rc=${PIPESTATUS[0]}
  echo "== $name: exit $rc in $((SECONDS - start)) s" | tee -a "$OUT_DIR/$name.txt" "$OUT_DIR/summary.txt"
}

step bf16_grpo python3 -m agentgrpo.cli train --config demo --use_cpu false --bf16 true --beta 0.04 \
  --dynamic_sampling refill --max_steps 12 --save_steps 6 --eval_size 50 --runs_dir "$RUNS" --run_name bf16
step bf16_doctor python3 -m agentgrpo.cli doctor "$RUNS/bf16" --out "$RUNS/bf16/doctor"
step lora_grpo python3 -m agentgrpo.cli train --config demo --use_cpu false --bf16 true --use_peft true --lora_r 8 \
  --lora_alpha 16 --max_steps 6 --save_steps 3 --eval_size 20 --runs_dir "$RUNS" --run_name lora
[ "${SKIP_SPEED:-0}" = 1 ] || step doctor_speed python3 benchmarks/doctor_speed.py --steps 100000 --repeat 3
cat "$OUT_DIR/summary.txt"
