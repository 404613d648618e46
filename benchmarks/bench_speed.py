"""tiny_cpu's speed on both kernel paths, against a pinned baseline commit measured in the same run.

For each kernel path -- `default` (what `train.precision=auto` chooses on this machine: bf16 where
the CPU has AVX512-BF16 or AMX) and `avx2-fp32` (`train.precision=fp32` with torch, oneDNN and MKL
held to AVX2: the oldest x86 the project supports, reproducible on any newer one) -- and for each
code (the baseline commit, checked out in a temporary `git worktree`, and this working tree):

- `ttt-lab train experiment=tiny_cpu` from an empty home, in a fresh process: its wall time and
  the split of that time per component (warm-up, generation, exploiter refreshes, the rest of RL:
  the updates, evaluations, tracking; tree walks are counted inside the refreshes and evaluations
  that ran them), and the final policy's measures (wins against random, exploitability, lines with
  an invalid reply);
- RL games/s at 256 games a step (`bench_train.measure` of that code: the first phase of
  minimax games of tiny_cpu, `tiny_cpu_two_phases` since tiny_cpu's one phase plays the exploiter,
  from the warm-up the wall run built, the median step).

    python benchmarks/bench_speed.py [--baseline 8787923] [--paths default avx2-fp32]
                                     [--seeds 0] [--no-rl] [--only current] [--extra OVERRIDE ...]

The ratios printed are the baseline's time over this tree's (higher is faster). The shared
machine drifts by 10-20 % between minutes: compare numbers of one run. Runs are sequential. The
split is given in wall seconds and in the process's CPU seconds (all threads): on a machine other
work shares, torch's threads wait on each other and wall time swings far more than CPU time.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BASELINE = "8787923"
AVX2 = {"ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2", "MKL_ENABLE_INSTRUCTIONS": "AVX2"}
PATHS = {"default": ({}, []), "avx2-fp32": (AVX2, ["train.precision=fp32"])}
"""Kernel path -> (environment, overrides)."""
SPLIT = ("warm_up", "generation", "refresh", "update", "eval", "tracking", "other", "tree_walks")
"""The split's columns; `update` is the RL phases' time outside generation and refreshes (the loss's
forward and backward passes, the optimizer, checkpoints), `tree_walks` overlaps refresh and eval."""


# ---------------------------------------------------------------------------------------------
# child: one measurement in a fresh process, on the code of PYTHONPATH


class _Timer:
    """Seconds inside wrapped functions, outermost calls only (a walk inside a walk counts once)."""

    def __init__(self) -> None:
        self.seconds, self.cpu, self.calls, self.depth = 0.0, 0.0, 0, 0

    def wrap(self, fn):
        def wrapped(*a, **k):
            if self.depth:
                return fn(*a, **k)
            self.depth += 1
            t, c = time.perf_counter(), time.process_time()
            try:
                return fn(*a, **k)
            finally:
                self.seconds += time.perf_counter() - t
                self.cpu += time.process_time() - c
                self.calls += 1
                self.depth -= 1

        wrapped.__wrapped__ = fn
        return wrapped


def _patch(timer: _Timer, owner, name: str) -> None:
    fn = getattr(owner, name, None)
    if fn is not None:
        setattr(owner, name, timer.wrap(fn))


def _child_wall(home: Path, overrides: list[str], out: Path) -> None:
    """Run tiny_cpu through the CLI in this process, write the split and the final measures to `out`."""
    import ttt_lab.env.exact as exact
    import ttt_lab.evaluation.trees as trees
    import ttt_lab.train.exploiter as exploiter
    import ttt_lab.train.grpo_rollout as grpo_rollout
    import ttt_lab.train.pipeline as pipeline
    from ttt_lab import timing

    gen, refresh, walks = _Timer(), _Timer(), _Timer()
    _patch(gen, grpo_rollout, "play_rollouts")
    _patch(refresh, exploiter.Refresher, "__call__")
    _patch(refresh, exploiter.Refresher, "settle")
    for owner in (exact, trees):
        _patch(walks, owner, "expand_tree")
    clocks: list = []
    init = timing.Clock.__init__

    def remember(self, *a, **k):
        init(self, *a, **k)
        clocks.append(self)

    timing.Clock.__init__ = remember
    charge = timing.Clock._charge

    def charge_cpu(self) -> None:  # the same phases in CPU seconds (a loaded machine's wall time drifts)
        now = time.process_time()
        cpu = self.__dict__.setdefault("cpu", {})
        name = self._stack[-1] if self._stack else "other"
        cpu[name] = cpu.get(name, 0.0) + now - self.__dict__.get("cpu_since", 0.0)
        self.cpu_since = now
        charge(self)

    timing.Clock._charge = charge_cpu
    outcome: dict = {}
    train = pipeline.train

    def keep(*a, **k):
        outcome["value"] = train(*a, **k)
        return outcome["value"]

    pipeline.train = keep
    sys.argv = ["ttt-lab", "train", "experiment=tiny_cpu", f"home={home}", *overrides]
    import atexit

    from ttt_lab.cli import app

    # the CLI ends its process with os._exit once atexit's handlers ran: the split is written by one
    atexit.register(_write_wall, out, clocks, gen, refresh, walks, outcome)
    try:
        app()
    except SystemExit as e:
        if e.code:
            raise


def _write_wall(out: Path, clocks: list, gen: _Timer, refresh: _Timer, walks: _Timer, outcome: dict) -> None:
    import ttt_lab.evaluation.trees as trees
    from ttt_lab import timing

    if out.exists() and out.stat().st_size:
        return
    seconds = clocks[0].metrics() if clocks else {}
    cpu_phases = clocks[0].__dict__.get("cpu", {}) if clocks else {}

    def split_of(phases: dict, attr: str) -> dict:
        split = {k: phases.get(k, 0.0) for k in ("start", "warm_up", "rl", "eval", "tracking", "other")}
        rl = split.pop("rl")
        split["generation"], split["refresh"] = getattr(gen, attr), getattr(refresh, attr)
        split["update"] = rl - split["generation"] - split["refresh"]
        split["other"] += split.pop("start")
        split["tree_walks"] = getattr(walks, attr)
        return split

    split = split_of({k: seconds.get(f"time/{k}_s", 0.0) for k in timing.PHASES}, "seconds")
    cpu = split_of(cpu_phases, "cpu")
    cpu["total"] = time.process_time()
    final = {}
    got = outcome.get("value")
    for s in getattr(got, "final", None) or []:
        final |= {k: v for k, v in s.metrics("eval").items()
                  if k.endswith(("/win_rate", "/draw_rate", "/invalid_rate", "exploitability"))}
    with contextlib.suppress(Exception):
        from ttt_lab.env.exploit import invalid_lines

        tree = next(reversed(trees._trees.values()))
        final["invalid_lines"] = invalid_lines(tree)
        final["lines"] = _lines(tree)
    counts = {"generation_calls": gen.calls, "refreshes": refresh.calls, "tree_walks": walks.calls}
    out.write_text(json.dumps({"split": split, "cpu": cpu, "final": final, "counts": counts}))


def _lines(tree) -> int:
    from ttt_lab.env.exact import Leaf, ModelTurn, OpponentTurn

    def count(node) -> int:
        if isinstance(node, OpponentTurn):
            return sum(count(c) for c in node.children.values())
        if isinstance(node, ModelTurn):
            return sum(count(c) for _, _, c in node.replies)
        return int(isinstance(node, Leaf))

    return sum(count(r.node) for r in tree.roots)


def _child_rl(home: Path, overrides: list[str], out: Path, steps: int, tree: Path) -> None:
    """RL games/s at 256 with the code's own `bench_train.measure`, from the wall run's warm-up."""
    sys.path.insert(0, str(tree / "benchmarks"))
    from bench_train import measure

    from ttt_lab.train.runtime import quiet, torch_threads

    quiet()
    torch_threads()
    start = next(p for p in sorted((home / "cache").glob("sft-*")) if p.is_dir() and not p.name.endswith(".work"))
    # the same phase of minimax games on both codes: tiny_cpu's first phase until it became the
    # exploiter phase, kept since as tiny_cpu_two_phases'
    two = (tree / "conf" / "experiment" / "tiny_cpu_two_phases.yaml").is_file()
    preset = "tiny_cpu_two_phases" if two else "tiny_cpu"
    base = [f"experiment={preset}", f"home={home}", "tracking.enabled=false", *overrides]
    rate, share, alone = measure(base, start, home / "rl-bench", 256, steps)
    out.write_text(json.dumps({"rl256": rate, "generating": share, "generation_alone": alone}))


# ---------------------------------------------------------------------------------------------
# parent


def _run_child(tree: Path, env_extra: dict, args: list[str]) -> tuple[float, dict]:
    env = {k: v for k, v in os.environ.items() if k not in AVX2}
    env |= env_extra | {"PYTHONPATH": str(tree)}
    env.pop("TTT_LAB_TEST", None)
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        out = Path(f.name)
    t = time.perf_counter()
    proc = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--out", str(out), "--child", *args],
                          env=env, cwd=tree, capture_output=True, text=True)
    wall = time.perf_counter() - t
    if proc.returncode:
        sys.stderr.write(proc.stdout[-3000:] + proc.stderr[-6000:])
        raise SystemExit(f"child failed ({tree}, {args})")
    data = json.loads(out.read_text())
    out.unlink()
    return wall, data


@contextlib.contextmanager
def _baseline_tree(commit: str):
    with tempfile.TemporaryDirectory(prefix="ttt-baseline-") as d:
        path = Path(d) / "tree"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "-q", str(path), commit], check=True)
        try:
            yield path
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(path)], check=False)


def _measure(tree: Path, path: str, seed: int, rl: bool, steps: int, extra: list[str]) -> dict:
    env, overrides = PATHS[path]
    overrides = [*overrides, f"seed={seed}", *extra]
    with tempfile.TemporaryDirectory(prefix="ttt-speed-") as d:
        home = Path(d)
        wall, got = _run_child(tree, env, ["wall", "--home", str(home), "--", *overrides])
        got["wall"] = wall
        if rl:
            _, rate = _run_child(tree, env, ["rl", "--home", str(home), "--steps", str(steps), "--tree", str(tree),
                                             "--", *overrides])
            got |= rate
    return got


def _cpu() -> str:
    info = {}
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            k, _, v = line.partition(":")
            info.setdefault(k.strip(), v.strip())
    flags = set(info.get("flags", "").split())
    extra = [f for f in ("avx512f", "avx512_bf16", "amx_bf16") if f in flags]
    return (f"{info.get('vendor_id', '?')} family {info.get('cpu family', '?')} model {info.get('model', '?')} "
            f"({info.get('model name', '?')}; {' '.join(extra) or 'no AVX-512'}), {os.cpu_count()} cpus")


def _print(path: str, seed: int, base: dict | None, cur: dict) -> None:
    print(f"\n== kernel path {path}, seed {seed} ==")
    print(f"{'':22s} {'baseline':>10s} {'current':>10s} {'speed-up':>9s}")

    def row(label: str, b: float | None, c: float, higher_better: bool = False, fmt: str = "10.1f") -> None:
        ratio = "" if b is None or not b or not c else f"{(c / b if higher_better else b / c):8.2f}x"
        bs = f"{b:{fmt}}" if b is not None else f"{'-':>10s}"
        print(f"{label:22s} {bs} {c:{fmt}} {ratio:>9s}")

    row("tiny_cpu wall s", base and base["wall"], cur["wall"])
    for k in SPLIT:
        row(f"  {k} s", base and base["split"].get(k, 0.0), cur["split"].get(k, 0.0))
    row("tiny_cpu CPU s", base and base["cpu"]["total"], cur["cpu"]["total"])
    for k in SPLIT:
        row(f"  {k} CPU s", base and base["cpu"].get(k, 0.0), cur["cpu"].get(k, 0.0))
    if "rl256" in cur:
        row("RL games/s @256", base and base.get("rl256"), cur["rl256"], higher_better=True)
        row("  generating share", base and base.get("generating"), cur["generating"], fmt="10.2f")
    for k in sorted(cur["counts"]):
        row(f"  {k}", base and base["counts"].get(k), cur["counts"][k], fmt="10d")
    for name, got in (("baseline", base), ("current", cur)):
        if got:
            f = got["final"]
            print(f"  final ({name}): wins vs random {100 * f.get('eval/random/win_rate', float('nan')):.2f} %, "
                  f"draws vs optimal {100 * f.get('eval/optimal/draw_rate', float('nan')):.2f} %, "
                  f"exploitability {f.get('eval/exploitability', float('nan')):g}, "
                  f"invalid lines {f.get('invalid_lines', '?')} of {f.get('lines', '?')}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", default=BASELINE, help="the pinned commit to compare with")
    ap.add_argument("--paths", nargs="+", default=list(PATHS), choices=list(PATHS))
    ap.add_argument("--seeds", type=int, nargs="+", default=[0])
    ap.add_argument("--steps", type=int, default=6, help="RL steps per games/s measurement")
    ap.add_argument("--no-rl", action="store_true", help="skip the RL games/s measurement")
    ap.add_argument("--only", choices=("current", "baseline"), help="measure one code only")
    ap.add_argument("--json", type=Path, help="also write every measurement here")
    ap.add_argument("--extra", nargs="*", default=[],
                    help="overrides added to every run (a smoke test: train.sft.epochs=1 train.phases.0.steps=2 ...)")
    ap.add_argument("--child", choices=("wall", "rl"), help=argparse.SUPPRESS)
    ap.add_argument("--home", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--tree", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("rest", nargs="*", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child == "wall":
        return _child_wall(args.home, args.rest, args.out)
    if args.child == "rl":
        return _child_rl(args.home, args.rest, args.out, args.steps, args.tree)

    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                          text=True).stdout.strip()
    dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True).stdout.strip()
    print(f"machine: {_cpu()}; current: {head}{' (modified)' if dirty else ''}; baseline: {args.baseline}")
    results: dict = {}
    with contextlib.ExitStack() as stack:
        base_tree = None if args.only == "current" else stack.enter_context(_baseline_tree(args.baseline))
        for path in args.paths:
            for seed in args.seeds:
                rl = not args.no_rl
                base = None if base_tree is None else _measure(base_tree, path, seed, rl, args.steps, args.extra)
                cur = base if args.only == "baseline" else _measure(ROOT, path, seed, rl, args.steps, args.extra)
                results[f"{path}/{seed}"] = {"baseline": base, "current": cur}
                _print(path, seed, base, cur)
                sys.stdout.flush()
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    print("\ngoals: tiny_cpu >= 2.9x the baseline on avx2-fp32 (438 s -> 150 s on EPYC-AVX2), no slower on "
          "the default path; RL >= 300 games/s at 256 on avx2-fp32")


if __name__ == "__main__":
    main()
