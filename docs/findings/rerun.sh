#!/usr/bin/env bash
# Re-run one named study to its answer and copy its report here:
#   docs/findings/rerun.sh STUDY FOLDER [WORKERS]
# The study runs with --until-settled (its max_seeds in sweeps/STUDY.yaml); the report's page,
# figures, verdict.json and results.csv replace those in docs/findings/FOLDER/ (FOLDER may be
# nested, e.g. batch_size/fixed-games; its README.md is kept), with run.txt saying the command,
# commit and wall time. Run it from a clean checkout of the commit it records.
set -euo pipefail
study=$1 folder=$2 workers=${3:-2}
cd "$(dirname "$0")/../.."
start=$(date +%s)
.venv/bin/ttt-lab sweep "$study" --until-settled --workers "$workers"
.venv/bin/ttt-lab report "$study"
wall=$(( $(date +%s) - start ))
out=docs/findings/$folder
mkdir -p "$out" && rm -rf "$out"/report.md "$out"/figures "$out"/verdict.json "$out"/results.csv "$out"/run.txt
src=${TTT_LAB_HOME:-runs}/reports/$study
cp -r "$src"/report.md "$src"/figures "$src"/verdict.json "$src"/results.csv "$out"/
printf 'command: ttt-lab sweep %s --until-settled --workers %s && ttt-lab report %s\ncommit: %s%s\nwall: %d s on %d cores (%s)\n' \
  "$study" "$workers" "$study" "$(git rev-parse --short HEAD)" "$(git diff --quiet HEAD -- ttt_lab conf sweeps || echo ' (dirty)')" \
  "$wall" "$(nproc)" "$(lscpu | sed -n 's/^Model name: *//p' | head -1)" > "$out/run.txt"
cat "$out/run.txt"
