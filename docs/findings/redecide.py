"""Re-decide every finding from its results.csv under its study file's rules (anytime decisions):
writes verdict.json and decision.md (the answer, the per-seed values behind each comparison, the
collapse rates) beside each finding. A replay of finished trials, not a rerun:

    .venv/bin/python docs/findings/redecide.py
"""

from __future__ import annotations

from pathlib import Path

from ttt_lab.report.decisions import section_blocks, verdict_json
from ttt_lab.report.replay import replay
from ttt_lab.report.section import Section
from ttt_lab.studies.spec import from_file

ROOT = Path(__file__).resolve().parents[2]
FINDINGS = {"exploiter": "exploiter", "memorisation": "memorisation", "batch_size/fixed-games": "batch_size",
            "batch_size/fixed-updates": "batch_size_updates", "curriculum": "curriculum"}
EXPLORATORY = ("The collapse threshold was declared after these trials ran: the collapse rates below are "
               "exploratory, to be confirmed on new seeds with the threshold declared first.")


def main() -> None:
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
        if spec.collapse_below is not None:
            md = md.replace("Collapse (declared before the first trial)", f"{EXPLORATORY} Collapse")
        (out / "decision.md").write_text(f"# {folder}: the decision, replayed under `decisions: anytime`\n\n"
                                         f"Written by `docs/findings/redecide.py` from results.csv.\n\n{md}\n")
        print(f"{folder}: " + "; ".join(f"{c.condition} {c.decision}" for c in a.comparisons))


if __name__ == "__main__":
    main()
