"""The report as one self-contained HTML page (inline SVG, no script, no network) and its
Markdown twin (figures as SVG files beside it), both from the templates in
`ttt_lab/templates/` (`report.html.j2`, `report.md.j2`). Each section is a list of blocks
(`ttt_lab.pages`): paragraphs, tables, figures, audits."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ttt_lab import atomic
from ttt_lab.config.schema import StabilityConfig
from ttt_lab.formats import pct
from ttt_lab.pages import Figures, Para, Table
from ttt_lab.report import figures, time_split
from ttt_lab.report.audit_sections import audits
from ttt_lab.report.collect import CURVES, FINAL_METRICS, Study, Trial, spec_of, values
from ttt_lab.report.section import Section
from ttt_lab.report.stability import Flag, flags, phase_starts, rules_text
from ttt_lab.stats.rates import mean_interval
from ttt_lab.tracking import keys

PUBLISHED = (
    ("LFM2-2.6B base", (40, 11, 49), (0, 11, 89)),
    ("+SFT", (74, 13, 13), (0, 52, 48)),
    ("+RL phase 1", (86, 12, 2), (0, 85, 15)),
    ("+RL phase 2", (90, 10, 0), (0, 97, 3)),
    ("gpt-5-mini (teacher)", (90, 9, 1), (0, 76, 24)),
)
"""Published W/D/L % vs random | vs optimal (DESIGN.md): another model and budget, for reference."""


@dataclass
class Report:
    study: Study
    sections: list[Section] = field(default_factory=list)
    svgs: dict[str, str] = field(default_factory=dict)
    """File name -> SVG text (for the Markdown twin)."""
    answer: Any = None
    """The decisions (`ttt_lab.report.decisions.Answer`), once the answer section is built."""


def objective(study: Study) -> str:
    objs = spec_of(study).get(keys.OBJECTIVES) or [{"metric": "eval/optimal/draw_rate"}]
    return objs[0]["metric"]


def results_rows(study: Study) -> list[dict]:
    key = objective(study)
    rows = []
    for cond, trials in study.conditions().items():
        row = {"condition": cond, "seeds": len(trials)}
        for m in FINAL_METRICS:
            row[m] = mean_interval(values(trials, m), (0.0, 1.0) if m.endswith("_rate") else None)
        ranked = sorted((t for t in trials if key in t.metrics), key=lambda t: t.metrics[key])
        row["best"] = f"seed {ranked[-1].seed} ({pct(ranked[-1].metrics[key])})" if ranked else "-"
        row["worst"] = f"seed {ranked[0].seed} ({pct(ranked[0].metrics[key])})" if ranked else "-"
        rows.append(row)
    return rows


def header(study: Study) -> Section:
    t = study.tags
    spec = spec_of(study)
    date = datetime.fromtimestamp(study.start_time / 1000, UTC).strftime("%Y-%m-%d %H:%M UTC")
    dirty = " (dirty tree)" if t.get(keys.GIT_DIRTY) == "true" else ""
    items = [("question", t.get(keys.QUESTION) or "-"), ("command", t.get(keys.COMMAND, "-")), ("date", date),
             ("commit", f"{t.get(keys.GIT_COMMIT, '?')}{dirty}"),
             ("baseline config hash", t.get(keys.CONFIG_HASH, "?")), ("fixed overrides", t.get(keys.OVERRIDES, "")),
             ("varied", json.dumps(spec.get(keys.PARAMS))), ("objective", objective(study)),
             ("trials", f"{sum(x.finished for x in study.trials)} finished of {len(study.trials)}")]
    blocks: list = [Para("Partial report: " + "; ".join(study.problems), "warn")] if study.problems else []
    return Section(f"Study '{study.name}'", [*blocks, Table(["", ""], [[k, v] for k, v in items])])


SHOWN = ("eval/random/win_rate", "eval/random/draw_rate", "eval/random/loss_rate", "eval/optimal/draw_rate",
         "eval/optimal/loss_rate", "eval/random/invalid_rate", "eval/random/format_rate", "eval/optimal/reward")
POOLED = ("eval/random/win_rate", "eval/random/draw_rate", "eval/random/loss_rate", "eval/optimal/draw_rate",
          "eval/optimal/loss_rate")


def over_seeds(interval: tuple[float, float, float], seeds: int) -> str:
    """A condition's mean; its Student-t interval with 2+ seeds, never a zero-width one for 1 seed."""
    mean, lo, hi = interval
    return f"{pct(mean)} (1 seed)" if seeds == 1 else f"{pct(mean)} [{pct(lo)}, {pct(hi)}]"


def pooled_rows(study: Study) -> list[list[str]]:
    """Every condition's evaluation over its seeds: sampled games pooled, with Wilson intervals;
    exactly evaluated runs (eval/mode 1) as the mean exact rate with the bounds of the mass the
    walk left unexplored: their rates carry no sampling noise to put an interval on."""
    from ttt_lab.stats.rates import pooled, wilson

    rows = []
    for cond, trials in study.conditions().items():
        cells, games = [], set()
        exact = bool(trials) and all(t.metrics.get("eval/mode") == 1.0 for t in trials)
        for m in POOLED:
            if exact:
                cells.append(_exact_cell(trials, m))
                continue
            got = pooled([t.metrics for t in trials], m)
            if got is None:
                cells.append("-")
                continue
            lo, hi = wilson(got.successes, got.games)
            cells.append(f"{pct(got.rate)} [{pct(lo)}, {pct(hi)}]")
            games.add(got.games)
        label = "exact" if exact else "/".join(str(g) for g in sorted(games)) or "-"
        rows.append([cond, label, *cells])
    return rows


def _exact_cell(trials: list, metric: str) -> str:
    from statistics import fmean

    have = [t.metrics for t in trials if metric in t.metrics]
    if not have:
        return "-"
    mean = fmean(m[metric] for m in have)
    lo = fmean(m.get(f"{metric}_lo", m[metric]) for m in have)
    hi = fmean(m.get(f"{metric}_hi", m[metric]) for m in have)
    return pct(mean) if hi - lo < 5e-4 else f"{pct(mean)} (bounds {pct(lo)}-{pct(hi)})"


def results(study: Study) -> Section:
    head = ["condition", "seeds", *[m.removeprefix("eval/") for m in SHOWN], "best", "worst"]
    rows = []
    for r in results_rows(study):
        cells = [over_seeds(r[m], r["seeds"]) for m in SHOWN]
        rows.append([r["condition"], str(r["seeds"]), *cells, r["best"], r["worst"]])
    pooled_head = ["condition", "games per opponent (or exact)", *[m.removeprefix("eval/") for m in POOLED]]
    pooled_note = ("The same conditions over all their seeds' evaluations: for sampled games, the pooled rate and its "
                   "95 % Wilson interval over games; for exact evaluations ('exact'), the mean exact rate, with the "
                   "bounds that the probability mass left unexplored allows (no interval: nothing was sampled).")
    note = ("Mean over seeds with a 95 % Student-t interval over seeds (percent; reward as a fraction x 100); a "
            f"condition with one seed says so instead; best and worst seed by {objective(study)}.")
    ref_head = ["published (LFM2, DESIGN.md)", "W/D/L vs random", "W/D/L vs optimal"]
    ref_rows = [[n, "/".join(map(str, a)), "/".join(map(str, b))] for n, a, b in PUBLISHED]
    ref_note = ("Published figures, for orientation only: a 2.6B model with LoRA, 600 + 400 steps of 256-480 "
                "games; not the setting of this study.")
    return Section("Results", [Para(note), Table(head, rows), Para(pooled_note), Table(pooled_head, pooled_rows(study)),
                               Para(ref_note, "note"), Table(ref_head, ref_rows)])


def verdict_section(report: Report) -> Section:
    """The study's question answered: a decision per comparison, its difference and interval."""
    from ttt_lab.report.decisions import answer, section_blocks

    report.answer = answer(report.study)
    return Section("Answer", section_blocks(report.answer, report.svgs))


def curves(report: Report) -> Section:
    conds = report.study.conditions()
    figs = Figures()
    for key in CURVES:
        for axis in ("steps", "games"):
            series = {}
            for cond, trials in conds.items():
                scale = trials[0].batch_size if axis == "games" else 1
                series[cond] = figures.aggregate([t.curves.get(key, []) for t in trials if t.curves.get(key)], scale)
            svg = figures.band_chart(f"{key} vs {axis}", series, "games seen" if axis == "games" else "step",
                                     _boundaries(conds, axis))
            name = f"{key.replace('/', '_')}_{axis}.svg"
            report.svgs[name] = svg
            figs.items.append((f"{key} vs {axis}", svg, name))
    note = ("Mean over seeds (line) and the range over seeds (band); games seen = step x batch size; a dashed "
            "line marks where a training phase begins.")
    return Section("Learning curves", [Para(note), figs])


def _boundaries(conds: dict[str, list[Trial]], axis: str) -> list[tuple[float, str]]:
    """Where each phase after the first begins, on the chart's x axis (from each condition's first run),
    labelled with the phase's name."""
    out: set[tuple[float, str]] = set()
    for trials in conds.values():
        scale = trials[0].batch_size if axis == "games" else 1
        params = trials[0].params
        out |= {(step * scale, params.get(f"train.phases.{phase}.name") or f"phase {phase + 1}")
                for step, phase in phase_starts(trials[0].curves)[1:]}
    return sorted(out)


def stability(study: Study, c: StabilityConfig | None = None) -> Section:
    rows = []
    for t in study.trials:
        for f in flags(t.curves, c):
            rows.append([str(t.number), " ".join(t.overrides), f.rule, str(f.step), f.detail])
    found = Table(["trial", "overrides", "flag", "step", "what fired"], rows) if rows else \
        Para("No run tripped a stability rule.")
    return Section("Stability flags", [found, Para("Rules:"),
                                       Table(["rule", "fires when"], [[k, v] for k, v in rules_text(c).items()])])


def reproduce(study: Study) -> Section:
    rows, warnings = [], []
    for cond, trials in study.conditions().items():
        commits = {(t.tags.get(keys.GIT_COMMIT), t.tags.get(keys.GIT_DIRTY)) for t in trials}
        versions = {json.dumps({k: v for k, v in t.tags.items() if k.startswith(keys.VERSION_PREFIX)}, sort_keys=True)
                    for t in trials}
        if len(commits) > 1 or len(versions) > 1:
            warnings.append(f"{cond}: its runs differ in {'commit' if len(commits) > 1 else 'package versions'}")
        for t in trials:
            vers = ", ".join(f"{k.removeprefix(keys.VERSION_PREFIX)} {v}" for k, v in sorted(t.tags.items())
                             if k.startswith(keys.VERSION_PREFIX))
            rows.append([cond, str(t.seed), t.tags.get(keys.COMMAND, "?"), t.tags.get(keys.CONFIG_HASH, "?"),
                         f"{t.tags.get(keys.GIT_COMMIT, '?')[:12]}"
                         f"{' dirty' if t.tags.get(keys.GIT_DIRTY) == 'true' else ''}", vers,
                         f"ttt-lab reproduce {t.run_id}"])
    table = Table(["condition", "seed", "command", "config hash", "commit", "versions", "check"], rows)
    return Section("Reproduce", ([Para("Warning: " + "; ".join(warnings), "warn")] if warnings else []) + [table])


def build(study: Study, with_audits: bool = True, c: StabilityConfig | None = None,
          trust_code: bool = False) -> Report:
    report = Report(study)
    report.sections = [header(study), verdict_section(report), results(study), curves(report), stability(study, c)]
    if with_audits:
        report.sections.append(audits(study, trust_code))
    report.sections.append(Section("Where the time went", time_split.blocks(study, report.svgs)))
    report.sections.append(reproduce(study))
    return report


def config_diff(a: Study, b: Study) -> Section:
    """Keys whose values differ between the two studies' first finished trials (their full configs)."""
    pa = next(t for t in a.trials if t.finished).params
    pb = next(t for t in b.trials if t.finished).params
    skip = ("home", "tracking.")
    rows = [[k, pa.get(k, "-"), pb.get(k, "-")] for k in sorted(set(pa) | set(pb))
            if pa.get(k) != pb.get(k) and not k.startswith(skip)]
    note = "Full configs of each study's first finished trial (trial-level overrides included)."
    return Section("Config differences", [Para(note), Table(["key", a.name, b.name], rows) if rows
                                          else Para("No difference.")])


def build_compare(a: Study, b: Study, c: StabilityConfig | None = None) -> Report:
    """Two studies side by side: both headers, one results table, their curves, config differences."""
    merged = Study(f"{a.name} vs {b.name}", a.parent_id, a.tags, a.start_time,
                   [_prefixed(t, a.name) for t in a.trials] + [_prefixed(t, b.name) for t in b.trials],
                   a.problems + b.problems)
    report = Report(merged)
    ha, hb = header(a), header(b)
    report.sections = [Section(f"A: {ha.title}", ha.blocks), Section(f"B: {hb.title}", hb.blocks),
                       config_diff(a, b), results(merged), curves(report), stability(merged, c)]
    return report


def _prefixed(t: Trial, name: str) -> Trial:
    import dataclasses

    return dataclasses.replace(t, condition=f"{name}: {t.condition}")


def write(report: Report, out: Path) -> list[Path]:
    from ttt_lab.pages import render

    out.mkdir(parents=True, exist_ok=True)
    (out / "figures").mkdir(exist_ok=True)
    for name, svg in report.svgs.items():
        atomic.write_text(out / "figures" / name, svg)
    context = {"name": report.study.name, "sections": report.sections}
    paths = [out / "index.html", out / "report.md"]
    for p, template in zip(paths, ("report.html.j2", "report.md.j2"), strict=True):
        atomic.write_text(p, render(template, **context))
    if report.answer is not None:
        from ttt_lab.report.decisions import results_csv, verdict_json

        atomic.write_text(out / "verdict.json", verdict_json(report.answer))
        atomic.write_text(out / "results.csv", results_csv(report.study))
        paths += [out / "verdict.json", out / "results.csv"]
    return paths


__all__ = ["Flag", "Report", "Section", "Trial", "build", "write"]
