#!/usr/bin/env bash
# A short GPU training check (never part of `make test`): a few RL steps of the tiny model and of a
# small real checkpoint when one is given, generating with transformers and, when the vllm package is
# installed, with vLLM (colocated); prints the time of each.
#   MODEL=/path/or/hub-id bash benchmarks/gpu_check.sh
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
BIN=${BIN:-.venv/bin/ttt-lab}
HOME_DIR=$(mktemp -d)
export TTT_LAB_HOME=$HOME_DIR
common=(experiment=tiny_cpu model.device=cuda tracking.enabled=false train.sft.num_games=200 train.sft.epochs=1
        steps=3 batch_size=256 eval.games=50 train.eval_every=0)
$PY -c 'import torch; assert torch.cuda.is_available(), "no CUDA device"; print("GPU:", torch.cuda.get_device_name(0))'
engines=(transformers)
$PY -c 'import vllm' 2>/dev/null && engines+=(vllm) || echo "vllm not installed: vLLM runs skipped (pip install vllm)"
timed() {  # LABEL ARGS...: one short training run, its wall time
  local label=$1; shift
  local t; t=$(date +%s.%N); $BIN train "$@"; echo "== $label: $(echo "$(date +%s.%N) - $t" | bc) s"
}
for engine in "${engines[@]}"; do
  flag=$([ "$engine" = vllm ] && echo train.use_vllm=true || echo train.use_vllm=false)
  timed "tiny, $engine" "${common[@]}" "$flag"
  if [ -n "${MODEL:-}" ]; then
    timed "$MODEL, $engine" "${common[@]}" "$flag" model.name=real "model.path=$MODEL" model.dtype=bfloat16 batch_size=64
  fi
done
rm -rf "$HOME_DIR"
