"""`ttt-lab report`: `ttt_lab.api.report` writes the pages and logs them on the study's parent run;
this says what was written and the study's answer."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from ttt_lab import api


def report(study: str, out: str | None, console: Console, overrides: list[str] | None = None,
           compare: str | None = None, trust_code: bool = False) -> Path:
    result = api.report(study, out=out, overrides=overrides, compare=compare, trust_code=trust_code)
    data, paths = result.study, result.paths
    if result.compared is not None:
        console.print(f"comparison of '{data.name}' and '{result.compared.name}': wrote {paths[0]} and {paths[1]}",
                      highlight=False)
        return paths[0]
    conds = data.conditions()
    partial = "; PARTIAL: " + "; ".join(data.problems) if data.problems else ""
    console.print(f"report of '{data.name}': {len(conds)} condition(s), {sum(map(len, conds.values()))} finished "
                  f"trial(s){partial}", highlight=False)
    console.print(f"wrote {paths[0]} and {paths[1]} (+ figures/, verdict.json, results.csv)", highlight=False)
    for line in result.answer:
        console.print(line, highlight=False, markup=False)
    return paths[0]
