"""Where a study's time went: each trial's wall time split by phase (`ttt_lab.timing`), summed
per condition and over the study, so the next speed-up is aimed at the largest part."""

from __future__ import annotations

from ttt_lab.pages import Figures, Para, Table
from ttt_lab.report import figures
from ttt_lab.report.collect import Study, natural_key
from ttt_lab.timing import PHASES, PREFIX

LABELS = {"start": "process start", "warm_up": "warm-up", "rl": "RL", "eval": "evaluation", "audit": "audit",
          "tracking": "tracking", "other": "other (loading, configs)"}


def split(metrics: dict[str, float]) -> dict[str, float] | None:
    """A trial's seconds per phase, or None for a trial run before trials were timed."""
    if f"{PREFIX}total_s" not in metrics:
        return None
    return {p: metrics.get(f"{PREFIX}{p}_s", 0.0) for p in PHASES}


def blocks(study: Study, svgs: dict[str, str]) -> list:
    """The section's blocks; its figure is added to `svgs` (the Markdown twin writes it beside the page)."""
    per: dict[str, dict[str, float]] = {}
    timed = untimed = 0
    for cond, trials in study.conditions().items():
        for t in trials:
            s = split(t.metrics)
            if s is None:
                untimed += 1
                continue
            timed += 1
            acc = per.setdefault(cond, dict.fromkeys(PHASES, 0.0))
            for p, v in s.items():
                acc[p] += v
    if not per:
        return [Para("No trial of this study recorded where its time went (trials run before ttt-lab timed them).")]
    total = {p: sum(acc[p] for acc in per.values()) for p in PHASES}
    whole = sum(total.values()) or 1.0
    rows = [[LABELS[p], f"{total[p]:.0f}", f"{100 * total[p] / whole:.0f}"] for p in PHASES]
    rows.append(["all phases", f"{whole:.0f}", "100"])
    largest = max(PHASES, key=lambda p: total[p])
    text = (f"{timed} trials, {whole:.0f} s of trial time in all (summed over workers, so more than the wall time "
            f"when several ran at once); RL is {100 * total['rl'] / whole:.0f} % of it, the largest part is "
            f"{LABELS[largest]} ({100 * total[largest] / whole:.0f} %). The warm-up is paid by the first trial that "
            "needs it and reused by the rest.")
    if untimed:
        text += f" {untimed} trial(s) ran before trials were timed and are left out."
    ordered = sorted(per.items(), key=lambda kv: natural_key(kv[0]))
    svg = figures.stacked_bars("Where the time went, per condition", [(c, {LABELS[p]: v[p] for p in PHASES})
                                                                     for c, v in ordered],
                               tuple(LABELS[p] for p in PHASES))
    svgs["time_split.svg"] = svg
    return [Para(text), Table(["phase", "seconds", "% of trial time"], rows),
            Figures([("Where the time went: seconds per phase, summed over each condition's trials", svg,
                      "time_split.svg")])]
