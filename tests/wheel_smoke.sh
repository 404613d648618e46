#!/usr/bin/env bash
# The installed wheel, used as a new user would, from a folder that is not the checkout:
#   tests/wheel_smoke.sh VENV WORKDIR
# VENV holds ttt-lab installed from its wheel (not editable); WORKDIR is an empty folder.
# Every command must exit 0; the last line says what ran.
set -euo pipefail
venv=$(cd "$1" && pwd)
work=$(cd "$2" && pwd)
cd "$work"
export TTT_LAB_HOME="$work/runs" TTT_LAB_TORCH_THREADS=1 OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1
tl="$venv/bin/ttt-lab"
py="$venv/bin/python"

where=$("$py" -c 'import ttt_lab.config.load as l; print(l.conf_dir())')
case "$where" in
  "$venv"/*) ;;
  *) echo "the config tree comes from $where, not from the installed wheel in $venv" >&2; exit 1 ;;
esac
"$tl" --version
"$tl" config show > config.txt
grep -q "config hash" config.txt
"$tl" train experiment=smoke
"$tl" sweep batch_size=8,16 experiment=smoke --name wheel-smoke
"$tl" sweep quickstart --dry-run
"$tl" sweep --list | grep -q "package"
"$tl" report wheel-smoke
test -s runs/reports/wheel-smoke/index.html
"$tl" runs export wheel-smoke --format csv --out trials.csv
test "$(wc -l < trials.csv)" -eq 3  # a header and one row per trial
# A user's preset beside the shipped ones.
mkdir -p presets/experiment
"$py" - <<'EOF'
import pathlib
import ttt_lab.config.load as l
pathlib.Path("presets/experiment/my_smoke.yaml").write_text((l.conf_dir() / "experiment" / "smoke.yaml").read_text())
EOF
"$tl" --config-dir presets config show experiment=my_smoke --diff > diff.txt
# The Python API, no terminal.
"$py" - <<'EOF'
from ttt_lab import api
cfg = api.load_config(["experiment=smoke", "tracking.enabled=false"])
rates = api.evaluate(["player=random", "eval.suite=quick", "games=10", "tracking.enabled=false"]).metrics
assert rates, "evaluate returned no metrics"
assert len(api.export("wheel-smoke").rows) == 2
EOF
# The verifiers environment from the same wheel, where verifiers is installed.
if "$py" -c 'import verifiers' 2>/dev/null; then
  "$py" -c 'from ttt_lab_verifiers import load_environment; load_environment()'
  echo "verifiers environment loaded from the wheel"
fi
echo "wheel smoke test passed: config show, train, sweep (grid, named dry run, list), report, runs export, --config-dir, API"
