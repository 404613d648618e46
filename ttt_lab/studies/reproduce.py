"""`ttt-lab reproduce RUN_ID`: train again from the run's logged resolved config (not today's
defaults) in a scratch folder, and compare the numbers with the logged ones.

Determinism on CPU needs the same code, packages and torch thread count (the run's
`ttt.torch_threads` tag is reused): then the tiny model, the SFT data, the rollouts (seeded
generators, per-turn opponent seeds) and the updates repeat bit for bit.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from ttt_lab import log
from ttt_lab.errors import TttLabError
from ttt_lab.tracking import keys

LOG = log.get("studies")


CROSS_PATH_TOLERANCE = 1e-3
"""Relative tolerance between a run and its rerun on another kernel path: float32 kernels that
round differently moved one update's weights by about 1e-5 of their size (tests/train/
test_distributed.py measures it per machine); a metric of the first steps stays well within 1e-3,
and a later one can drift further once a rounding flips a sampled token, which the report says."""


@dataclass
class Comparison:
    rows: list[tuple[str, int, float | None, float | None]] = field(default_factory=list)
    """(metric, step, logged, reproduced) for every compared point."""
    warnings: list[str] = field(default_factory=list)
    tolerance: float = 0.0
    """Relative: 0 (bit for bit) on the run's own kernel path, CROSS_PATH_TOLERANCE on another."""

    @property
    def mismatches(self) -> list[tuple[str, int, float | None, float | None]]:
        import math

        def same(a: float | None, b: float | None) -> bool:
            if a is None or b is None:
                return a == b
            return a == b or (self.tolerance > 0 and math.isclose(a, b, rel_tol=self.tolerance, abs_tol=1e-9))

        return [r for r in self.rows if not same(r[2], r[3])]


def path_difference(logged: str | None, here: dict[str, str]) -> str:
    """One sentence naming how this machine's kernel path differs from the run's; empty when it
    does not (or the run predates the record)."""
    import json

    if not logged:
        return ""
    then = json.loads(logged)
    keys_ = sorted(k for k in set(then) | set(here) if k != "threads" and then.get(k) != here.get(k))
    if not keys_:
        return ""
    return ("the run ran on another CPU kernel path (" + "; ".join(
        f"{k}: {then.get(k, '-')} then, {here.get(k, '-')} here" for k in keys_) + "): floats round differently, "
        f"so the numbers are compared within a relative {CROSS_PATH_TOLERANCE:g}, not bit for bit, and a "
        "later step can drift once a rounding flips a sampled token")


def _warnings(tags: dict[str, str]) -> list[str]:
    from ttt_lab.tracking.provenance import git_state, has_commit

    out = []
    commit = tags.get(keys.GIT_COMMIT, "")
    if tags.get(keys.GIT_DIRTY) == "true":
        out.append("the run was made from a tree with uncommitted changes: its exact code is not recorded")
    head, dirty = git_state()
    if commit and commit != head:
        known = has_commit(commit)
        out.append(f"the run was made at commit {commit[:12]}, this tree is at {head[:12]}"
                   + ("" if known else " (that commit is not in this repository)"))
    if dirty:
        out.append("this tree has uncommitted changes")
    return out


def logged_config(store, run) -> dict:
    import yaml

    from ttt_lab.tracking.store import read_text_artifact

    text = read_text_artifact(store, run.info.run_id, "config.yaml")
    if text is None:
        raise TttLabError(f"Run {run.info.run_id} has no logged config.yaml artifact, so it cannot be re-run from "
                          "its own config. Runs made by `ttt-lab train` or `ttt-lab sweep` log one.")
    return yaml.safe_load(text)


ADDED_SINCE = {("model", "tokens"): "words"}
"""Settings added to the schema after runs were logged, with the value those runs used: a logged
config without one is an older run (before `model.tokens`, the tiny model read words)."""


def scratch_tree(tree: dict, scratch: Path, steps: int | None) -> dict:
    tree = dict(tree)
    for (group, key), value in ADDED_SINCE.items():
        if isinstance(tree.get(group), dict) and key not in tree[group]:
            tree[group] = dict(tree[group], **{key: value})
    tree["home"] = str(scratch)
    tree["tracking"] = dict(tree["tracking"], enabled=True, uri=f"sqlite:///{scratch}/mlflow.db",
                            artifacts=str(scratch / "mlartifacts"), experiment="reproduce")
    if steps is not None:
        budget = tree["train"].get("budget_games")
        left, phases = steps, []
        for p in tree["train"]["phases"]:
            n = max(1, budget // p["batch_size"]) if budget else p["steps"]
            if left <= 0:
                break
            phases.append(dict(p, steps=min(n, left)))
            left -= min(n, left)
        tree["train"] = dict(tree["train"], budget_games=None, phases=phases)
    return tree


def _bookkeeping(key: str) -> bool:
    """Wall-clock timings, and the epoch (a fraction of the run's planned steps), are not results."""
    return key == "train/epoch" or key.endswith(("_time", "runtime", "_per_second"))


def compare(store, run, again_store, again_id: str, steps: int | None) -> Comparison:
    from ttt_lab.tracking.store import get_run, metric_history

    out = Comparison()
    if steps is None:
        new = get_run(again_store, again_id).data.metrics
        for key, value in sorted(run.data.metrics.items()):
            if key.startswith(("eval/", "eval_sft/")):
                out.rows.append((key, -1, value, new.get(key)))
        return out
    keys = [k for k in run.data.metrics if k.startswith("train/") and not _bookkeeping(k)]
    for key in sorted(keys):
        old = dict(p for p in metric_history(store, run.info.run_id, key) if p[0] <= steps)
        new = dict(metric_history(again_store, again_id, key))
        out.rows += [(key, s, v, new.get(s)) for s, v in sorted(old.items())]
    return out


def reproduce(run_id: str, steps: int | None = None, overrides: list[str] | None = None,
              trust_code: bool = False) -> Comparison:
    from ttt_lab.config.load import from_tree, load
    from ttt_lab.tracking.store import get_run, open_store
    from ttt_lab.train.pipeline import train

    cfg = load(overrides or []).cfg
    store = open_store(cfg.tracking.uri, cfg.tracking.artifacts, cfg.home, cfg.tracking.outage_wait_s)
    run = get_run(store, run_id)
    if run is None:
        raise TttLabError(f"No run {run_id} in the tracking store ({cfg.tracking.uri}). `ttt-lab runs list` shows "
                          "runs; a study's trial runs are listed in its report's Reproduce section.")
    tree = logged_config(store, run)
    scratch = Path(cfg.home) / "reproduce" / run_id
    shutil.rmtree(scratch, ignore_errors=True)
    threads = run.data.tags.get(keys.TORCH_THREADS)
    if threads:
        os.environ["TTT_LAB_TORCH_THREADS"] = threads
    loaded = from_tree(scratch_tree(tree, scratch, steps), run.data.tags.get(keys.OVERRIDES, "").split())
    warnings = _warnings(run.data.tags)
    from ttt_lab.train.runtime import kernel_path, torch_threads

    torch_threads()
    moved = path_difference(run.data.tags.get(keys.KERNEL_PATH), kernel_path(loaded.cfg.model.device))
    if moved:
        warnings.append(moved)
    for w in warnings:
        LOG.warning(f"warning: {w}")
    from ttt_lab.config.build import check_trusted

    check_trusted(loaded.cfg.opponent, trust_code, f"run {run_id}'s logged config")
    outcome = train(loaded, fresh=True)
    if outcome.run_id is None:
        raise TttLabError(f"the rerun of {run_id} logged no run (tracking.enabled=false in its config?), so there "
                          "is nothing to compare; reproduce a run that was tracked.")
    again = open_store(loaded.cfg.tracking.uri, loaded.cfg.tracking.artifacts)
    result = compare(store, run, again, outcome.run_id, steps)
    result.warnings = warnings
    result.tolerance = CROSS_PATH_TOLERANCE if moved else 0.0
    return result
