"""Report benchmark: a study of 100 trial runs x 200 logged steps, built into a report,
against a baseline measured in the same run.

    python benchmarks/bench_report.py [--runs N] [--steps S]

The store is filled once with synthetic trials (MLflow log_batch; not timed). Timed: reading
the study back (parent, children, final metrics, 8 curves per run), the statistics, the
figures and writing index.html + report.md; once without and once with the audits of the
study's opponent and dataset. Baseline: `mlflow.search_runs` of the same child runs
(one query, what a notebook would start from). Goal: under 10 s.
"""

from __future__ import annotations

import argparse
import os
import random
import tempfile
import time
from pathlib import Path


def fill(store, runs: int, steps: int) -> str:
    from mlflow.entities import Metric, Param, RunTag

    from ttt_lab.report.collect import CURVES, FINAL_METRICS
    from ttt_lab.tracking.store import TrackedRun

    rng = random.Random(0)
    parent = TrackedRun(store, "bench", name="bench", tags={"ttt.kind": "sweep", "ttt.overrides": "experiment=smoke",
                                                            "ttt.params": '{"batch_size": "64,128,256,512"}'})
    for i in range(runs):
        bs, seed = (64, 128, 256, 512)[i % 4], i // 4
        child = TrackedRun(store, "bench", name=f"trial-{i}", parent_run_id=parent.run_id, tags={
            "ttt.trial": str(i), "optuna.state": "COMPLETE", "ttt.trial_overrides": f"batch_size={bs} seed={seed}",
            "ttt.command": f"ttt-lab train batch_size={bs} seed={seed}", "ttt.config_hash": f"{i:012x}"})
        now = int(time.time() * 1000)
        ms = [Metric(k, rng.random(), now, s) for k in CURVES for s in range(1, steps + 1)]
        ms += [Metric(k, rng.random(), now, steps) for k in FINAL_METRICS]
        for j in range(0, len(ms), 1000):
            store.client.log_batch(child.run_id, metrics=ms[j : j + 1000], synchronous=True)
        store.client.log_batch(child.run_id, params=[Param("seed", str(seed)),
                                                     Param("train.phases.0.batch_size", str(bs))],
                               tags=[RunTag("x", "y")], synchronous=True)
        child.end("FINISHED")
    parent.end("FINISHED")
    return parent.run_id


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--steps", type=int, default=200)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as home:
        os.environ["TTT_LAB_HOME"] = home
        import mlflow

        from ttt_lab.report.collect import collect
        from ttt_lab.report.render import build, write
        from ttt_lab.tracking.store import open_store

        store = open_store(f"sqlite:///{home}/mlflow.db", f"{home}/mlartifacts")
        t = time.perf_counter()
        parent = fill(store, args.runs, args.steps)
        print(f"filled {args.runs} runs x {args.steps} steps in {time.perf_counter() - t:.1f} s (not timed)")
        t = time.perf_counter()
        mlflow.set_tracking_uri(store.uri)
        mlflow.search_runs(experiment_names=["bench"], filter_string=f"tags.mlflow.parentRunId = '{parent}'")
        base = time.perf_counter() - t
        timings = {}
        for audits in (False, True):
            t = time.perf_counter()
            write(build(collect(store, "bench"), with_audits=audits), Path(home) / "report")
            timings[audits] = time.perf_counter() - t
    print(f"report of {args.runs} runs x {args.steps} steps: {timings[False]:.2f} s without audits, "
          f"{timings[True]:.2f} s with them (goal < 10 s)")
    print(f"baseline: one mlflow.search_runs of the runs {base:.2f} s; ratio report/baseline "
          f"{timings[False] / base:.1f}")


if __name__ == "__main__":
    main()
