"""Calibration of the decision procedures: false "differs", false "equivalent", power and seeds to a
decision on simulated studies of every shape this project's studies take, and AdaStop on the
same shapes.

    python benchmarks/bench_decisions.py [--studies 10000] [--adastop 150]

Each shape is simulated under no true difference, with the arm exactly at the margin and at twice
the margin. `anytime` is looked at after every seed up to the shape's N (a budget raise only adds
looks); `fixed` at looks declared up front (6, 12, 24, ... N). A row passes when both false rates are
at most alpha + 3 Monte Carlo standard errors and 80 % of the studies at twice the margin decided
"differs" by N. AdaStop (Mathieu et al. 2023; 6 seeds per arm per interim) has no "equivalent": it
is compared on false "differs" and on seeds until the direction is shown. Exit 1 when a row fails.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from ttt_lab.stats import calibration, simulate
from ttt_lab.stats.findings import shapes as finding_shapes

ALPHA = 0.05
ROOT = Path(__file__).resolve().parents[1]


def shapes() -> list[tuple[simulate.Shape, int, int]]:
    """(shape, N seeds, comparisons)."""
    g = simulate.gaussian
    out = [(simulate.Shape("gaussian, shared seed effect (rho +0.5)", 0.05, g(0.5)), 200, 1),
           (simulate.Shape("gaussian, no seed effect (rho 0)", 0.05, g(0.0)), 200, 1),
           (simulate.Shape("gaussian, opposed seed effect (rho -0.5)", 0.05, g(-0.5)), 200, 1),
           (simulate.Shape("gaussian, 3 comparisons (rho +0.5)", 0.05, g(0.5)), 250, 3),
           (simulate.Shape("three-valued {0, 1/2, 1} (exploitability)", 0.1, simulate.three_valued), 500, 1),
           (simulate.Shape("collapse mixture (batch size, curriculum)", 0.05, simulate.collapsing), 1000, 1)]
    sizes = {"memorisation": 1500, "exploiter": 500, "curriculum": 1400}
    found = finding_shapes(ROOT / "docs/findings")
    out += [(s, next((v for k, v in sizes.items() if k in s.name), 1000), 1) for s in found]
    return out


def looks(n: int) -> list[int]:
    out = [6]
    while out[-1] * 2 < n:
        out.append(out[-1] * 2)
    return [*out, n]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--studies", type=int, default=10_000)
    ap.add_argument("--adastop", type=int, default=150, help="simulated studies per shape for AdaStop (0: skip)")
    args = ap.parse_args()
    print(f"{'shape':48} {'procedure':8} {'false differs':>13} {'false equiv':>11} {'limit':>6} "
          f"{'power@N':>8} {'N':>5} {'N for 80%':>9} {'to decide':>9} {'to direction':>12}  ok")
    failed = 0
    start = time.perf_counter()
    for shape, n, m in shapes():
        for procedure in ("anytime", "fixed"):
            r = calibration.calibrate(shape, procedure, studies=args.studies, seeds=n, comparisons=m,
                                      looks=looks(n), alpha=ALPHA)
            limit = ALPHA + 3 * r.mc_error(ALPHA)
            ok = r.false_differs <= limit and r.false_equivalent <= limit and r.power >= calibration.POWER
            failed += not ok
            print(f"{shape.name:48} {procedure:8} {r.false_differs:13.4f} {r.false_equivalent:11.4f} {limit:6.4f} "
                  f"{r.power:8.3f} {n:5d} {r.seeds_for_power:9.0f} {r.seeds_to_decide:9.1f} "
                  f"{r.seeds_to_direction:12.1f}  {'yes' if ok else 'NO'}", flush=True)
        if args.adastop and m == 1:
            a = calibration.adastop(shape, studies=args.adastop, step=6, interims=5, alpha=ALPHA)
            limit = ALPHA + 3 * (ALPHA * (1 - ALPHA) / args.adastop) ** 0.5
            print(f"{shape.name:48} {'AdaStop':8} {a['false_differs']:13.4f} {'-':>11} {limit:6.4f} "
                  f"{a['power']:8.3f} {30:5d} {'-':>9} {'-':>9} {a['seeds_to_decide']:12.1f}  "
                  f"({args.adastop} studies)", flush=True)
    print(f"{args.studies} studies per shape and truth; {time.perf_counter() - start:.0f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
