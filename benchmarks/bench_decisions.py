"""Calibration of the decision procedures: each endpoint's false decisions on its own nulls, its
false "equivalent" at its equivalence margin, and the seeds to a decision beside the exact fixed-n
sign test and AdaStop.

    python benchmarks/bench_decisions.py [--studies 10000] [--adastop 300]

Every case is simulated with 2 arms and with 4 (a family of 3), up to 30 seeds looked at after
every seed (`anytime`: budget raises 3, 6, ..., 30 only add looks) and at the declared looks
3, 6, ..., 30 (`fixed`). A row passes when every false rate is at most its endpoint's share of
alpha plus three Monte Carlo standard errors. Exit 1 when a row fails."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.calibration import calibrate as cal
from benchmarks.calibration import simulate as sim
from benchmarks.calibration.findings import all_pairs
from ttt_lab.stats import improvement
from ttt_lab.stats.design import Design

ROOT = Path(__file__).resolve().parents[1]
SEEDS = 30
LOOKS = list(range(3, SEEDS + 1, 3))
P, M, C = sim.IMPROVEMENT, sim.MEAN, sim.COLLAPSE


def cases() -> list[sim.Case]:
    """Each case with the endpoints it is a null for (a decision there is an error)."""
    out = [sim.Case("skewed pairs, equal means (collapse 20 % vs 9 points worse)", sim.skewed_equal_means, (M,)),
           sim.Case("mirror: P(improvement) 1/2, means differ", sim.mirror, (P,)),
           sim.Case("exchangeable, shared seed effect (rho +0.5)", sim.gaussian(0.5), (P, M, C), collapse_below=0.8),
           sim.Case("exchangeable, opposed seed effect (rho -0.5)", sim.gaussian(-0.5), (P, M, C),
                    collapse_below=0.8),
           sim.Case("exchangeable, three-valued {0, 1/2, 1}", sim.three_valued, (P, M, C), margin=0.1,
                    collapse_below=0.4),
           sim.Case("exchangeable, bimodal (collapse or not)", sim.bimodal, (P, M, C), collapse_below=0.6),
           sim.Case("P(improvement) at 1/2 + delta (delta 0.25)", sim.signs(0.75), (), delta=0.25,
                    equivalence=(P,)),
           sim.Case("mean exactly at the margin", sim.gaussian(0.5, shift=0.05, sd=0.01), (), margin=0.05,
                    equivalence=(M,))]
    for name, (pairs, verdict) in all_pairs(ROOT / "docs/findings").items():
        lo, hi = verdict["bounds"]
        bounds = (lo, hi) if verdict.get("direction", "maximize") == "maximize" else (-hi, -lo)
        out.append(sim.Case(f"{name} resampled, arms swapped", sim.resampled(pairs, null="swap"), (P, M),
                            margin=verdict["margin"], bounds=bounds))
        out.append(sim.Case(f"{name} resampled, centred to mean 0", sim.resampled(pairs, null="centred"), (M,),
                            margin=verdict["margin"], bounds=bounds))
    return out


def false_rates(studies: int) -> int:
    print(f"{'case':62} {'proc':7} {'arms':>4}  false rate / limit per endpoint")
    failed = 0
    for case in cases():
        for arms in (2, 4) if "resampled" not in case.name else (2,):
            for procedure in ("anytime", "fixed"):
                r = cal.calibrate(case, procedure, studies=studies, seeds=SEEDS, arms=arms, looks=LOOKS)
                failed += not r.ok()
                cells = "  ".join(f"{e} {r.false[e]:.4f}/{r.limits[e]:.4f}" for e in r.false)
                print(f"{case.name:62} {procedure:7} {arms:4}  {cells}  {'ok' if r.ok() else 'FAIL'}", flush=True)
    return failed


def power(studies: int, adastop: int) -> None:
    alpha = Design().improvement_alpha
    print(f"\nSeeds for 80 % of studies to decide 'better' (probability of improvement; alpha {alpha:g} of 0.05, "
          "the mean keeping 0.01)")
    print(f"{'truth':42} {'family':>6} {'anytime':>8} {'fixed':>6} {'sign test':>9} {'ratio':>6} "
          f"{'AdaStop':>8} {'corrected':>9}")
    truths = [(f"P(improvement) {t}", sim.signs(t), t) for t in (0.7, 0.8, 0.9)]
    for name, (pairs, _) in all_pairs(ROOT / "docs/findings").items():
        d = [a - r for a, r in pairs]
        theta = (sum(x > 0 for x in d) + 0.5 * sum(x == 0 for x in d)) / len(d)
        if abs(theta - 0.5) >= 0.15:
            truths.append((f"{name} resampled ({theta:.2f})", sim.resampled(pairs), theta))
    for name, draw, theta in truths:
        for arms in (2, 4) if name.startswith("P(") else (2,):
            family = arms - 1
            up = max(theta, 1 - theta)
            case = sim.Case(name, draw if theta >= 0.5 else _flipped(draw), ())
            horizon = 200 if up < 0.75 else 80
            ours = cal.seeds_to_decide(case, studies=studies, seeds=horizon, arms=arms)
            looks = list(range(3, horizon + 1, 3))
            fixed = cal.seeds_to_decide(case, studies=studies, seeds=looks[-1], arms=arms, procedure="fixed",
                                        looks=looks)
            sign = cal.sign_test_seeds(up, alpha / family)
            ada = cor = "-"
            if adastop and arms == 2 and name.startswith("P("):
                ind = sim.independent(theta)
                ada = f"{cal.adastop(ind, studies=adastop, step=6, interims=10, alpha=0.05)[1]:.0f}"
                cor = f"{cal.adastop(ind, studies=adastop, step=6, interims=10, alpha=0.05, corrected=True)[1]:.0f}"
            ratio = ours / sign if sign else float("inf")
            print(f"{name:42} {family:6} {ours:8.0f} {fixed:6.0f} {sign or '-':>9} {ratio:6.2f} {ada:>8} {cor:>9}",
                  flush=True)
    print("\nSeeds after which a comparison whose seeds all agree decides (anytime; exact sign test):")
    for family in (1, 3, 6):
        for a in (0.05, alpha):
            sign = next(n for n in range(1, 60) if 2 * 0.5 ** n <= a / family)
            print(f"  family {family}, alpha {a:g}: {improvement.agreeing_to_decide(a / family)} (sign test {sign})")


def adastop_level(studies: int) -> None:
    """AdaStop's false "larger"/"smaller" with independent seeds per arm and no true difference,
    as shipped and read off |permuted statistics|, beside its share of decisions at P 0.8."""
    print(f"\nAdaStop, independent seeds per arm, 6 per interim, 10 interims, alpha 0.05 ({studies} studies; "
          f"one Monte Carlo SE at 0.05: {(0.05 * 0.95 / studies) ** 0.5:.3f})")
    for corrected in (False, True):
        level, _ = cal.adastop(sim.independent(0.5), studies=studies, step=6, interims=10, corrected=corrected)
        print(f"  {'corrected |T| boundary' if corrected else 'as shipped (adastop 0.1.3)':28} false decisions "
              f"{level:.3f}")


def _flipped(draw):
    def flipped(rng, studies, arms, seeds):
        v = draw(rng, studies, arms, seeds)
        return -v
    return flipped


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--studies", type=int, default=10_000)
    ap.add_argument("--adastop", type=int, default=300, help="simulated studies per truth for AdaStop (0: skip)")
    ap.add_argument("--part", choices=("all", "false", "power", "adastop"), default="all")
    args = ap.parse_args()
    start = time.perf_counter()
    failed = false_rates(args.studies) if args.part in ("all", "false") else 0
    if args.part in ("all", "power"):
        power(args.studies, args.adastop)
    if args.adastop and args.part in ("all", "adastop"):
        adastop_level(args.adastop)
    print(f"\n{args.studies} studies per case; {time.perf_counter() - start:.0f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
