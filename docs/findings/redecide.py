"""Re-decide every finding from its results.csv under its study file's rules (anytime decisions):
writes verdict.json and decision.md (the answer, the per-seed values behind each comparison, the
collapse rates) beside each finding, the answer that leads its README and its decision block, and
the findings index's line. One generator writes every one of them, so they cannot drift. A replay
of finished trials, not a rerun:

    .venv/bin/python docs/findings/redecide.py
"""

from __future__ import annotations

from pathlib import Path

from replay import replay  # beside this script

from ttt_lab.report.decisions import collapse_blocks, primary, section_blocks, seed_blocks, sentences, verdict_json
from ttt_lab.report.section import Section
from ttt_lab.studies.spec import from_file

ROOT = Path(__file__).resolve().parents[2]
FINDINGS = {"exploiter": "exploiter", "memorisation": "memorisation", "batch_size/fixed-games": "batch_size",
            "batch_size/fixed-updates": "batch_size_updates", "curriculum": "curriculum",
            "memorisation/warm-ups": "memorisation_warmups", "batch_size/fixed-updates-warm-ups":
                "batch_size_updates_warmups", "curriculum/confirm": "curriculum_confirm", "quickstart": "quickstart",
            "batch_size/card": "card"}
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
            md = md.replace(DECLARED, f"{EXPLORATORY} Collapse")
        (out / "decision.md").write_text(f"# {folder}: the decision, replayed under `decisions: {spec.decisions}`\n\n"
                                         f"Written by `docs/findings/redecide.py` from results.csv.\n\n{md}\n")
        _readme(out / "README.md", a, exploratory)
        rows.append(f"| [{folder}]({folder}/README.md) | {spec.question} | against {a.reference}: "
                    + "; ".join(_line(c) for c in a.comparisons) + " |")
        print(f"{folder}: " + "; ".join(f"{c.condition} {c.decision}" for c in a.comparisons))
    _index(ROOT / "docs" / "findings" / "README.md", rows)


def _line(c) -> str:
    """One comparison for the index, in the primary endpoint's words."""
    said = f"{c.condition}: **{c.decision}**, {c.better} better / {c.worse} worse of {c.seeds} seeds"
    if c.decision == "unresolved" and c.if_agree:
        said += f" (decides at {c.if_agree} if the next seeds agree)"
    return said


DECLARED = "Collapse (declared before the first look)"


def _index(path: Path, rows: list[str]) -> None:
    """The findings index's table of decisions, each quoted from its verdict.json."""
    head = "| finding | question | probability of improvement (replayed) |\n|---|---|---|\n"
    text = path.read_text()
    before, rest = text.split(START, 1)
    after = rest.split(END, 1)[1]
    path.write_text(f"{before}{START}\n{head}" + "\n".join(rows) + f"\n{END}{after}")


START, END = "<!-- decision: written by docs/findings/redecide.py -->", "<!-- /decision -->"


ANSWER, ANSWER_END = "<!-- answer: written by docs/findings/redecide.py -->", "<!-- /answer -->"


def _readme(path: Path, a, exploratory: bool) -> None:
    """A finding's README: its answer first (the primary endpoint's sentences, after the title),
    then its decision block (every sentence, the per-seed values, the collapse rates)."""
    blocks = [*seed_blocks(a), *collapse_blocks(a)]
    body = "\n\n".join([f"**Decision** (`decisions: {a.decisions.design.procedure if a.decisions else 'anytime'}`, "
                         "replayed from results.csv; "
                         "[decision.md](decision.md) has the figures and tables):", *sentences(a),
                         Section("", blocks).markdown.strip()])
    if exploratory:
        body = body.replace(DECLARED, f"{EXPLORATORY} Collapse")
    text = path.read_text()
    if START not in text:
        raise SystemExit(f"{path} has no {START} marker: put one where the decision belongs")
    text = _replace(text, START, END, body)
    answer = "**Answer** (probability of improvement, replayed): " + " ".join(primary(c, a) for c in a.comparisons)
    if ANSWER not in text:
        title, rest = text.split("\n", 1)
        text = f"{title}\n\n{ANSWER}\n{ANSWER_END}\n{rest}"
    path.write_text(_replace(text, ANSWER, ANSWER_END, answer))


def _replace(text: str, start: str, end: str, body: str) -> str:
    head, rest = text.split(start, 1)
    tail = rest.split(end, 1)[1] if end in rest else rest
    return f"{head}{start}\n{body}\n{end}{tail}"


if __name__ == "__main__":
    main()
