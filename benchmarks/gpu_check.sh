#!/usr/bin/env bash
# A short GPU training check (never part of `make test`): a few RL steps of the tiny model and of a
# small real checkpoint when one is given; prints the time of each.
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
t=$(date +%s.%N); $BIN train "${common[@]}"; echo "tiny, transformers generate: $(echo "$(date +%s.%N) - $t" | bc) s"
if [ -n "${MODEL:-}" ]; then
  t=$(date +%s.%N); $BIN train "${common[@]}" model.name=real "model.path=$MODEL" model.dtype=bfloat16 batch_size=64
  echo "$MODEL, transformers generate: $(echo "$(date +%s.%N) - $t" | bc) s"
  echo "vLLM inside training: not built yet (train.use_vllm=true stops with an error); skipped"
fi
rm -rf "$HOME_DIR"
