"""Dataset audit: is every update balanced over opponent strength, first player and shown
symbol, are seeds unique, and does the trainer see the batches in the audited order?"""

from __future__ import annotations

import json
import math
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ttt_lab.audit.checks import FAIL, PASS, Audit, Check, lower, skipped, upper
from ttt_lab.config.schema import DatasetAuditConfig
from ttt_lab.env.dataset import Example
from ttt_lab.env.settings import DatasetConfig
from ttt_lab.errors import TttLabError
from ttt_lab.stats.rates import chi2_sf


@dataclass
class DatasetSource:
    """Examples in the order they were produced, with the settings that say how to batch them."""

    name: str
    examples: list[Example]
    settings: DatasetConfig
    num_generations: int | None = None
    """Set when the examples feed GRPO updates: each update is one batch of prompts."""
    seed: int = 0
    accumulation: int = 1
    """Forward/backward passes per update (TRL repeats the batch's indices once per pass)."""


def read_saved(path: Path, fallback: DatasetConfig) -> DatasetSource:
    """A training phase's saved `dataset.jsonl` (with its `dataset.json` beside it, if any)."""
    if not path.is_file():
        raise TttLabError(f"No dataset file at {path}. Point --file at a `dataset.jsonl` that `ttt-lab train` "
                          "saved in a phase folder (runs/train/<hash>/<i>-<phase>/dataset.jsonl).")
    try:
        rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        examples = [Example(**r) for r in rows]
    except (ValueError, TypeError) as e:
        raise TttLabError(f"{path} is not a dataset written by ttt-lab ({e}). Each line must be one example as "
                          "JSON with index, seed, p_random, model_first, model_symbol and stratum.") from None
    meta_path = path.with_suffix(".json")
    settings, generations, accumulation = fallback, None, 1
    if meta_path.is_file():
        try:
            meta = json.loads(meta_path.read_text())
            generations = meta.pop("num_generations", None)
            accumulation = meta.pop("accumulation", 1)
            settings = DatasetConfig(**meta).validate(str(meta_path))
        except (ValueError, TypeError, AttributeError) as e:
            raise TttLabError(f"{meta_path}, the settings beside {path.name}, is not what ttt-lab writes ({e}): "
                              "restore it from the phase folder, or move it away to audit the examples under "
                              "the configured dataset settings.") from None
    return DatasetSource(str(path), examples, settings, generations, accumulation=accumulation)


def _bin(p: float, d: DatasetConfig) -> int:
    width = (d.p_max - d.p_min) / d.num_strata
    if width <= 0:
        return 0
    return min(d.num_strata - 1, max(0, int((p - d.p_min) / width)))


def _batches(src: DatasetSource) -> list[list[Example]]:
    n = src.settings.examples_per_batch
    return [src.examples[i : i + n] for i in range(0, len(src.examples), n)]


def stratum_check(src: DatasetSource, a: DatasetAuditConfig) -> tuple[Check, list[float]]:
    d = src.settings
    deviations = []
    for batch in _batches(src):
        counts = Counter(_bin(e.p_random, d) for e in batch)
        mean = len(batch) / d.num_strata
        deviations.append(max(abs(counts.get(k, 0) - mean) for k in range(d.num_strata)))
    balanced = sum(dev < 1 for dev in deviations) / len(deviations) if deviations else 1.0
    worst = max(deviations, default=0.0)
    return lower("stratum_balance", balanced, a.balanced_warn, a.balanced_fail,
                 f"share of {len(deviations)} batches of {d.examples_per_batch} with each of {d.num_strata} strata "
                 f"of p_random within one example of its mean (sampling={d.sampling}); worst batch off by "
                 f"{worst:.2f}"), deviations


def histogram_checks(src: DatasetSource) -> tuple[list[Check], list[int]]:
    d = src.settings
    outside = sum(not d.p_min <= e.p_random <= d.p_max for e in src.examples)
    hist = [0] * d.num_strata
    for e in src.examples:
        hist[_bin(e.p_random, d)] += 1
    n = len(src.examples)
    exp = n / d.num_strata
    chi2 = sum((h - exp) ** 2 / exp for h in hist) if n else 0.0
    p = chi2_sf(chi2, d.num_strata - 1)
    checks = [
        Check("p_random.range", float(outside), f"0 outside [{d.p_min:g}, {d.p_max:g}]", FAIL if outside else PASS,
              f"{outside} of {n} examples outside the configured range"),
        lower("p_random.uniform_p", p, 1e-3, 1e-6,
              f"chi-square of the p_random histogram against uniform over {d.num_strata} bins: {chi2:.1f}"),
    ]
    return checks, hist


def share_check(name: str, src: DatasetSource, setting: str, fixed: tuple[str, ...],
                flag: Callable[[Example], bool], a: DatasetAuditConfig) -> Check:
    if setting in fixed:
        return skipped(name, f"fixed by design ({setting})")
    n = len(src.examples)
    k = sum(flag(e) for e in src.examples)
    z = (k - n / 2) / math.sqrt(n / 4) if n else 0.0
    worst = max((abs(sum(flag(e) for e in b) / len(b) - 0.5) for b in _batches(src)), default=0.0)
    c = upper(name, abs(z), a.balance_z_warn, a.balance_z_fail,
              f"{k / n if n else 0:.3f} of {n} (setting {setting}); z = {z:+.2f}; worst batch off 1/2 by {worst:.3f}")
    return c


def duplicates_check(src: DatasetSource) -> Check:
    counts = Counter(e.seed for e in src.examples)
    dup = sum(c - 1 for c in counts.values() if c > 1)
    return Check("duplicate_seeds", float(dup), "0", FAIL if dup else PASS,
                 f"{dup} examples repeat another example's seed")


def order_check(src: DatasetSource) -> Check:
    """Indices must run 0..n-1 in file order, and TRL's sampler must hand each update the
    batch audited above (not a shuffled mix of batches)."""
    in_order = all(e.index == i for i, e in enumerate(src.examples))
    if not in_order:
        return Check("batch_order", 0.0, "examples in the order they were made", FAIL,
                     "example indices do not run 0..n-1: the batches audited are not the ones generated")
    if src.num_generations is None:
        return Check("batch_order", 1.0, "examples in the order they were made", PASS,
                     "indices run 0..n-1; batches of examples_per_batch in file order")
    from ttt_lab.train.phase_data import trainer_batches

    prompts = src.settings.examples_per_batch
    seen = trainer_batches(len(src.examples), prompts, src.num_generations, src.accumulation, src.seed)
    expected = [list(range(i, min(i + prompts, len(src.examples)))) for i in range(0, len(src.examples), prompts)]
    same = sum(s == e for s, e in zip(seen, expected, strict=False))
    share = same / len(expected) if expected else 1.0
    return Check("batch_order", share, "every update = one audited batch", PASS if share == 1.0 else FAIL,
                 f"{same} of {len(expected)} GRPO updates get exactly one audited batch from TRL's sampler "
                 f"({src.num_generations} rollouts per prompt)")


def audit_dataset(src: DatasetSource, a: DatasetAuditConfig) -> Audit:
    start = time.perf_counter()
    if not src.examples:
        raise TttLabError(f"The dataset {src.name} has no examples to audit; check dataset.size or the phase's steps.")
    audit = Audit("dataset", src.name)
    stratum, deviations = stratum_check(src, a)
    hist_checks, hist = histogram_checks(src)
    d = src.settings
    audit.checks = [
        stratum, *hist_checks,
        share_check("first_player_balance", src, d.first_player, ("model", "opponent"), lambda e: e.model_first, a),
        share_check("model_symbol_balance", src, d.model_symbol, ("X", "O"), lambda e: e.model_symbol == "X", a),
        duplicates_check(src),
        order_check(src),
    ]
    audit.data = {"histogram": hist, "p_min": d.p_min, "p_max": d.p_max, "batch_deviation": deviations,
                  "examples": len(src.examples), "examples_per_batch": d.examples_per_batch}
    audit.seconds = time.perf_counter() - start
    return audit
