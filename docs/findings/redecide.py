"""Re-decide every finding from its results.csv under its study file's rules (anytime decisions):
writes verdict.json and decision.md (the answer, the per-seed values behind each comparison, the
collapse rates) beside each finding. A replay of finished trials, not a rerun:

    .venv/bin/python docs/findings/redecide.py
"""

from __future__ import annotations

from pathlib import Path

from replay import replay  # beside this script

from ttt_lab.report.decisions import collapse_blocks, section_blocks, seed_blocks, sentences, verdict_json
from ttt_lab.report.section import Section
from ttt_lab.studies.spec import from_file

ROOT = Path(__file__).resolve().parents[2]
FINDINGS = {"exploiter": "exploiter", "memorisation": "memorisation", "batch_size/fixed-games": "batch_size",
            "batch_size/fixed-updates": "batch_size_updates", "curriculum": "curriculum",
            "memorisation/warm-ups": "memorisation_warmups", "batch_size/fixed-updates-warm-ups":
                "batch_size_updates_warmups", "curriculum/confirm": "curriculum_confirm"}
DECLARED_FIRST = {"batch_size_updates_warmups", "curriculum_confirm"}
"""Studies whose collapse threshold was in the study file before their first trial."""
EXPLORATORY = ("The collapse threshold was declared after these trials ran: the collapse rates below are "
               "exploratory, to be confirmed on new seeds with the threshold declared first.")


def main() -> None:
    rows = []
    for folder, study in FINDINGS.items():
        spec = from_file(ROOT / "sweeps" / f"{study}.yaml", [])
        out = ROOT / "docs" / "findings" / folder
        a = replay(out / "results.csv", spec)
        (out / "verdict.json").write_text(verdict_json(a))
        svgs: dict[str, str] = {}
        md = Section("Answer", section_blocks(a, svgs)).markdown
        for name, svg in svgs.items():
            (out / "figures").mkdir(exist_ok=True)
            (out / "figures" / name).write_text(svg)
        exploratory = spec.collapse_below is not None and study not in DECLARED_FIRST
        if exploratory:
            md = md.replace("Collapse (declared before the first trial)", f"{EXPLORATORY} Collapse")
        (out / "decision.md").write_text(f"# {folder}: the decision, replayed under `decisions: anytime`\n\n"
                                         f"Written by `docs/findings/redecide.py` from results.csv.\n\n{md}\n")
        _readme(out / "README.md", a, exploratory)
        said = "; ".join(f"{c.condition}: **{c.decision}** after {c.seeds} seeds, {_points(c.difference)} "
                         f"[{_points(c.lo)}, {_points(c.hi)}]" for c in a.comparisons)
        rows.append(f"| [{folder}]({folder}/README.md) | {spec.question} | against {a.reference}: {said} |")
        print(f"{folder}: " + "; ".join(f"{c.condition} {c.decision}" for c in a.comparisons))
    _index(ROOT / "docs" / "findings" / "README.md", rows)


def _points(x: float) -> str:
    return f"{100 * x:+.1f}"


def _index(path: Path, rows: list[str]) -> None:
    """The findings index's table of decisions, each quoted from its verdict.json."""
    head = "| finding | question | decisions (`anytime`, replayed) |\n|---|---|---|\n"
    text = path.read_text()
    before, rest = text.split(START, 1)
    after = rest.split(END, 1)[1]
    path.write_text(f"{before}{START}\n{head}" + "\n".join(rows) + f"\n{END}{after}")


START, END = "<!-- decision: written by docs/findings/redecide.py -->", "<!-- /decision -->"


def _readme(path: Path, a, exploratory: bool) -> None:
    """The decision block of a finding's README: the procedure's sentences verbatim, the per-seed
    values behind each comparison, the collapse rates."""
    blocks = [*seed_blocks(a), *collapse_blocks(a)]
    body = "\n\n".join(["**Decision** (`decisions: anytime`, replayed from results.csv; "
                         "[decision.md](decision.md) has the figures and tables):", *sentences(a),
                         Section("", blocks).markdown.strip()])
    if exploratory:
        body = body.replace("Collapse (declared before the first trial)", f"{EXPLORATORY} Collapse")
    text = path.read_text()
    if START not in text:
        raise SystemExit(f"{path} has no {START} marker: put one where the decision belongs")
    head, rest = text.split(START, 1)
    tail = rest.split(END, 1)[1] if END in rest else rest
    path.write_text(f"{head}{START}\n{body}\n{END}{tail}")


if __name__ == "__main__":
    main()
