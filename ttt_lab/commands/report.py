"""`ttt-lab report`."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console


def report(study: str, out: str | None, console: Console, overrides: list[str] | None = None,
           compare: str | None = None, trust_code: bool = False) -> Path:
    from ttt_lab.config.load import load
    from ttt_lab.names import under
    from ttt_lab.report.collect import collect
    from ttt_lab.report.render import build, build_compare, write
    from ttt_lab.tracking.store import open_store

    cfg = load(overrides or []).cfg
    store = open_store(cfg.tracking.uri, cfg.tracking.artifacts, cfg.home, cfg.tracking.outage_wait_s)
    data = collect(store, study)
    if compare is not None:
        other = collect(store, compare)
        built = build_compare(data, other, cfg.report.stability)
        folder = Path(out) if out else under(cfg.home, "reports", f"{data.name}-vs-{other.name}")
        paths = write(built, folder)
        console.print(f"comparison of '{data.name}' and '{other.name}': wrote {paths[0]} and {paths[1]}",
                      highlight=False)
        return paths[0]
    built = build(data, c=cfg.report.stability, trust_code=trust_code)
    folder = Path(out) if out else under(cfg.home, "reports", data.name)
    paths = write(built, folder)
    conds = data.conditions()
    console.print(f"report of '{data.name}': {len(conds)} condition(s), {sum(map(len, conds.values()))} finished "
                  f"trial(s){'; PARTIAL: ' + '; '.join(data.problems) if data.problems else ''}", highlight=False)
    console.print(f"wrote {paths[0]} and {paths[1]} (+ figures/, verdict.json, results.csv)", highlight=False)
    if built.answer is not None:
        from ttt_lab.report.decisions import sentences

        for line in sentences(built.answer):
            console.print(line, highlight=False, markup=False)
    _log_to_parent(store, data.parent_id, paths)
    return paths[0]


def _log_to_parent(store, parent_id: str, paths: list[Path]) -> None:
    """The report's files as artifacts of the study's parent run (under report/)."""
    for p in paths:
        if p.suffix in (".json", ".csv", ".md", ".html"):
            store.client.log_artifact(parent_id, str(p), "report")
