"""The report as one self-contained HTML page (inline SVG, no script, no network) and its
Markdown twin (figures as SVG files beside it)."""

from __future__ import annotations

import html
import json
import math
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from ttt_lab.config.schema import StabilityConfig
from ttt_lab.evaluation.stats import mean_interval
from ttt_lab.report import figures
from ttt_lab.report.collect import CURVES, FINAL_METRICS, Study, Trial, spec_of, values
from ttt_lab.report.stability import Flag, flags, rules_text

PUBLISHED = (
    ("LFM2-2.6B base", (40, 11, 49), (0, 11, 89)),
    ("+SFT", (74, 13, 13), (0, 52, 48)),
    ("+RL phase 1", (86, 12, 2), (0, 85, 15)),
    ("+RL phase 2", (90, 10, 0), (0, 97, 3)),
    ("gpt-5-mini (teacher)", (90, 9, 1), (0, 76, 24)),
)
"""Published W/D/L % vs random | vs optimal (DESIGN.md): another model and budget, for reference."""


@dataclass
class Section:
    title: str
    html: str
    markdown: str


@dataclass
class Report:
    study: Study
    sections: list[Section] = field(default_factory=list)
    svgs: dict[str, str] = field(default_factory=dict)
    """File name -> SVG text (for the Markdown twin)."""


def objective(study: Study) -> str:
    objs = spec_of(study).get("ttt.objectives") or [{"metric": "eval/optimal/draw_rate"}]
    return objs[0]["metric"]


def pct(v: float) -> str:
    return "-" if not math.isfinite(v) else f"{100 * v:.1f}"


def results_rows(study: Study) -> list[dict]:
    key = objective(study)
    rows = []
    for cond, trials in study.conditions().items():
        row = {"condition": cond, "seeds": len(trials)}
        for m in FINAL_METRICS:
            row[m] = mean_interval(values(trials, m))
        ranked = sorted((t for t in trials if key in t.metrics), key=lambda t: t.metrics[key])
        row["best"] = f"seed {ranked[-1].seed} ({pct(ranked[-1].metrics[key])})" if ranked else "-"
        row["worst"] = f"seed {ranked[0].seed} ({pct(ranked[0].metrics[key])})" if ranked else "-"
        rows.append(row)
    return rows


def _table(head: list[str], rows: list[list[str]]) -> tuple[str, str]:
    h = "<table><tr>" + "".join(f"<th>{html.escape(c)}</th>" for c in head) + "</tr>" + "".join(
        "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r in rows) + "</table>"
    md = "| " + " | ".join(head) + " |\n|" + "---|" * len(head) + "\n" + "".join(
        "| " + " | ".join(c.replace("|", "\\|") for c in r) + " |\n" for r in rows)
    return h, md


def header(study: Study) -> Section:
    t = study.tags
    spec = spec_of(study)
    date = datetime.fromtimestamp(study.start_time / 1000, UTC).strftime("%Y-%m-%d %H:%M UTC")
    dirty = " (dirty tree)" if t.get("ttt.git_dirty") == "true" else ""
    items = [("question", t.get("ttt.question") or "-"), ("command", t.get("ttt.command", "-")), ("date", date),
             ("commit", f"{t.get('mlflow.source.git.commit', '?')}{dirty}"),
             ("baseline config hash", t.get("ttt.config_hash", "?")), ("fixed overrides", t.get("ttt.overrides", "")),
             ("varied", json.dumps(spec.get("ttt.params"))), ("objective", objective(study)),
             ("trials", f"{sum(x.finished for x in study.trials)} finished of {len(study.trials)}")]
    h, md = _table(["", ""], [[k, v] for k, v in items])
    if study.problems:
        warn = "Partial report: " + "; ".join(study.problems)
        h = f"<p class='partial'><b>{html.escape(warn)}</b></p>" + h
        md = f"**{warn}**\n\n" + md
    return Section(f"Study '{study.name}'", h, md)


def results(study: Study) -> Section:
    shown = ("eval/random/win_rate", "eval/random/draw_rate", "eval/random/loss_rate", "eval/optimal/draw_rate",
             "eval/optimal/loss_rate", "eval/random/invalid_rate", "eval/random/format_rate", "eval/optimal/reward")
    head = ["condition", "seeds", *[m.removeprefix("eval/") for m in shown], "best", "worst"]
    rows = []
    for r in results_rows(study):
        cells = [f"{pct(r[m][0])} [{pct(r[m][1])}, {pct(r[m][2])}]" for m in shown]
        rows.append([r["condition"], str(r["seeds"]), *cells, r["best"], r["worst"]])
    h, md = _table(head, rows)
    note = ("Mean over seeds with a 95 % Student-t interval (percent; reward as a fraction x 100); best and worst "
            f"seed by {objective(study)}.")
    ref_head = ["published (LFM2, DESIGN.md)", "W/D/L vs random", "W/D/L vs optimal"]
    ref_rows = [[n, "/".join(map(str, a)), "/".join(map(str, b))] for n, a, b in PUBLISHED]
    rh, rmd = _table(ref_head, ref_rows)
    ref_note = ("Published figures, for orientation only: a 2.6B model with LoRA, 600 + 400 steps of 256-480 "
                "games; not the setting of this study.")
    return Section("Results", f"<p>{note}</p>{h}<p><i>{ref_note}</i></p>{rh}",
                   f"{note}\n\n{md}\n*{ref_note}*\n\n{rmd}")


def curves(report: Report) -> Section:
    conds = report.study.conditions()
    parts_h, parts_md = [], []
    for key in CURVES:
        for axis in ("steps", "games"):
            series = {}
            for cond, trials in conds.items():
                scale = trials[0].batch_size if axis == "games" else 1
                series[cond] = figures.aggregate([t.curves.get(key, []) for t in trials if t.curves.get(key)], scale)
            svg = figures.band_chart(f"{key} vs {axis}", series, "games seen" if axis == "games" else "step")
            name = f"{key.replace('/', '_')}_{axis}.svg"
            report.svgs[name] = svg
            parts_h.append(f"<figure>{svg}</figure>")
            parts_md.append(f"![{key} vs {axis}](figures/{name})")
    note = "Mean over seeds (line) and the range over seeds (band); games seen = step x batch size."
    return Section("Learning curves", f"<p>{note}</p>" + "".join(parts_h), note + "\n\n" + "\n".join(parts_md))


def stability(study: Study, c: StabilityConfig | None = None) -> Section:
    rows = []
    for t in study.trials:
        for f in flags(t.curves, c):
            rows.append([str(t.number), " ".join(t.overrides), f.rule, str(f.step), f.detail])
    h, md = _table(["trial", "overrides", "flag", "step", "what fired"], rows) if rows else \
        ("<p>No run tripped a stability rule.</p>", "No run tripped a stability rule.\n")
    rh, rmd = _table(["rule", "fires when"], [[k, v] for k, v in rules_text(c).items()])
    return Section("Stability flags", h + "<p>Rules:</p>" + rh, md + "\nRules:\n\n" + rmd)


def reproduce(study: Study) -> Section:
    rows, warnings = [], []
    for cond, trials in study.conditions().items():
        commits = {(t.tags.get("mlflow.source.git.commit"), t.tags.get("ttt.git_dirty")) for t in trials}
        versions = {json.dumps({k: v for k, v in t.tags.items() if k.startswith("ttt.version.")}, sort_keys=True)
                    for t in trials}
        if len(commits) > 1 or len(versions) > 1:
            warnings.append(f"{cond}: its runs differ in {'commit' if len(commits) > 1 else 'package versions'}")
        for t in trials:
            vers = ", ".join(f"{k.removeprefix('ttt.version.')} {v}" for k, v in sorted(t.tags.items())
                             if k.startswith("ttt.version."))
            rows.append([cond, str(t.seed), t.tags.get("ttt.command", "?"), t.tags.get("ttt.config_hash", "?"),
                         f"{t.tags.get('mlflow.source.git.commit', '?')[:12]}"
                         f"{' dirty' if t.tags.get('ttt.git_dirty') == 'true' else ''}", vers,
                         f"ttt-lab reproduce {t.run_id}"])
    h, md = _table(["condition", "seed", "command", "config hash", "commit", "versions", "check"], rows)
    if warnings:
        w = "Warning: " + "; ".join(warnings)
        h, md = f"<p class='partial'><b>{html.escape(w)}</b></p>" + h, f"**{w}**\n\n" + md
    return Section("Reproduce", h, md)


def audits(study: Study) -> Section:
    from ttt_lab.audit.output import html_section, markdown
    from ttt_lab.audit.run import dataset_audit, opponent_audit
    from ttt_lab.config.load import load

    overrides = study.tags.get("ttt.overrides", "").split()
    try:
        loaded = load(overrides)
        done = [opponent_audit(loaded), dataset_audit(loaded, None, trainer_order=False)]
    except Exception as e:  # the audits are extra: the report stands without them
        return Section("Audits", f"<p>Audits could not run: {html.escape(str(e))}</p>", f"Audits could not run: {e}\n")
    policy = policy_section(study)
    note = ("Computed from the study's fixed config. The dataset's batch order is checked against the examples' "
            "own order here; `ttt-lab audit dataset` also replays TRL's sampler.")
    return Section("Audits of the study's opponent and dataset",
                   f"<p>{note}</p>" + "".join(html_section(a) for a in done) + policy.html,
                   note + "\n\n" + "\n".join(markdown(a) for a in done) + "\n" + policy.markdown)


def policy_section(study: Study) -> Section:
    """The final policies' memorisation probes, where someone ran them."""
    by_id = {t.run_id: t for t in study.trials}
    rows = []
    for run_id, audit in study.policy_audits.items():
        t = by_id[run_id]
        checks = {c["name"]: c for c in audit["checks"]}
        gap = checks.get("memorisation.gap", {})
        rows.append([t.condition, str(t.seed), audit["status"], f"{gap.get('value', float('nan')):.3f}",
                     gap.get("detail", ""), f"{checks.get('fork_allowed_rate', {}).get('value', float('nan')):.3f}"])
    if not rows:
        text = ("No policy audit of the final checkpoints yet: `ttt-lab audit policy player=hf "
                "model.path=CHECKPOINT` (the checkpoint is each trial run's `ttt.checkpoint` tag) adds one here.")
        return Section("Policies", f"<h3>Final policies</h3><p>{html.escape(text)}</p>",
                       f"### Final policies\n\n{text}\n")
    h, md = _table(["condition", "seed", "status", "memorisation gap", "detail", "fork allowed"], rows)
    return Section("Policies", f"<h3>Final policies (memorisation probe)</h3>{h}",
                   f"### Final policies (memorisation probe)\n\n{md}")


def build(study: Study, with_audits: bool = True, c: StabilityConfig | None = None) -> Report:
    report = Report(study)
    report.sections = [header(study), results(study), curves(report), stability(study, c)]
    if with_audits:
        report.sections.append(audits(study))
    report.sections.append(reproduce(study))
    return report


def config_diff(a: Study, b: Study) -> Section:
    """Keys whose values differ between the two studies' first finished trials (their full configs)."""
    pa = next(t for t in a.trials if t.finished).params
    pb = next(t for t in b.trials if t.finished).params
    skip = ("home", "tracking.")
    rows = [[k, pa.get(k, "-"), pb.get(k, "-")] for k in sorted(set(pa) | set(pb))
            if pa.get(k) != pb.get(k) and not k.startswith(skip)]
    h, md = _table(["key", a.name, b.name], rows) if rows else ("<p>No difference.</p>", "No difference.\n")
    note = "Full configs of each study's first finished trial (trial-level overrides included)."
    return Section("Config differences", f"<p>{note}</p>{h}", f"{note}\n\n{md}")


def build_compare(a: Study, b: Study, c: StabilityConfig | None = None) -> Report:
    """Two studies side by side: both headers, one results table, their curves, config differences."""
    merged = Study(f"{a.name} vs {b.name}", a.parent_id, a.tags, a.start_time,
                   [_prefixed(t, a.name) for t in a.trials] + [_prefixed(t, b.name) for t in b.trials],
                   a.problems + b.problems)
    report = Report(merged)
    ha, hb = header(a), header(b)
    report.sections = [Section(f"A: {ha.title}", ha.html, ha.markdown), Section(f"B: {hb.title}", hb.html, hb.markdown),
                       config_diff(a, b), results(merged), curves(report), stability(merged, c)]
    return report


def _prefixed(t: Trial, name: str) -> Trial:
    import dataclasses

    return dataclasses.replace(t, condition=f"{name}: {t.condition}")


CSS = ("body{font-family:sans-serif;margin:2em;max-width:1300px}table{border-collapse:collapse;margin:.5em 0}"
       "td,th{border:1px solid #ddd;padding:3px 7px;text-align:left;font-size:13px}figure{display:inline-block;"
       "margin:.4em}.partial{color:#9a6700}")


def write(report: Report, out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    (out / "figures").mkdir(exist_ok=True)
    for name, svg in report.svgs.items():
        (out / "figures" / name).write_text(svg)
    body = "".join(f"<h2>{html.escape(s.title)}</h2>{s.html}" for s in report.sections)
    page = (f"<!doctype html><html><head><meta charset='utf-8'><title>ttt-lab report: "
            f"{html.escape(report.study.name)}</title><style>{CSS}</style></head><body><h1>ttt-lab report: "
            f"{html.escape(report.study.name)}</h1>{body}</body></html>\n")
    md = f"# ttt-lab report: {report.study.name}\n\n" + "".join(
        f"## {s.title}\n\n{s.markdown}\n" for s in report.sections)
    paths = [out / "index.html", out / "report.md"]
    for p, text in zip(paths, (page, md), strict=True):
        tmp = p.with_suffix(p.suffix + ".tmp")
        tmp.write_text(text)
        tmp.replace(p)
    return paths


__all__ = ["Flag", "Report", "Trial", "build", "write"]
