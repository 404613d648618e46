"""The report's audit sections: the study's opponent and dataset audited from its fixed
config, and the policy audits its trials recorded of their final checkpoints."""

from __future__ import annotations

from statistics import fmean

from ttt_lab.formats import pct
from ttt_lab.pages import Heading, Para, Table
from ttt_lab.report.collect import Study, natural_key
from ttt_lab.report.section import Section
from ttt_lab.tracking import keys


def audits(study: Study, trust_code: bool = False) -> Section:
    from ttt_lab.audit.output import block
    from ttt_lab.audit.run import dataset_audit, opponent_audit
    from ttt_lab.config.build import check_trusted
    from ttt_lab.config.load import load

    overrides = study.tags.get(keys.OVERRIDES, "").split()
    try:
        loaded = load(overrides)
        check_trusted(loaded.cfg.opponent, trust_code, f"the study '{study.name}' in the tracking store")
        done = [opponent_audit(loaded), dataset_audit(loaded, None, trainer_order=False)]
    except Exception as e:  # the audits are extra: the report stands without them
        return Section("Audits", [Para(f"Audits could not run: {e}")])
    policy = policy_section(study)
    note = ("Computed from the study's fixed config. The dataset's batch order is checked against the examples' "
            "own order here; `ttt-lab audit dataset` also replays TRL's sampler.")
    return Section("Audits of the study's opponent and dataset", [Para(note), *map(block, done), *policy.blocks])


def policy_section(study: Study) -> Section:
    """The final policies' memorisation probes and fork rates: per condition, then per trial."""
    by_id = {t.run_id: t for t in study.trials}
    rows: list[list[str]] = []
    per_condition: dict[str, list[tuple[str, float, float]]] = {}
    for run_id, audit in study.policy_audits.items():
        t = by_id[run_id]
        checks = {c["name"]: c for c in audit["checks"]}
        gap = checks.get("memorisation.gap", {})
        fork = checks.get("fork_allowed_rate", {}).get("value", float("nan"))
        per_condition.setdefault(t.condition, []).append((audit["status"], gap.get("value", float("nan")), fork))
        rows.append([t.condition, str(t.seed), audit["status"], f"{gap.get('value', float('nan')):.3f}",
                     gap.get("detail", ""), f"{fork:.3f}"])
    missing = [t for t in study.trials if t.finished and t.run_id not in study.policy_audits]
    if not rows:
        text = ("No policy audit of the final checkpoints in this study (its trials ran with "
                "audit.policy.in_studies=false, or before trials audited themselves): `ttt-lab audit policy "
                "player=hf model.path=CHECKPOINT` (each trial run's `ttt.checkpoint` tag) adds one here.")
        return Section("Policies", [Heading("Final policies"), Para(text)])
    ordered = sorted(per_condition.items(), key=lambda cv: natural_key(cv[0]))
    summary = [[c, f"{sum(s == 'FAIL' for s, _, _ in v)} of {len(v)}", f"{100 * fmean(g for _, g, _ in v):+.1f}",
                pct(fmean(f for _, _, f in v))] for c, v in ordered]
    blocks = [Heading("Final policies (memorisation probe)"),
              Table(["condition", "memorisation FAIL", "gap, mean (points)", "fork allowed, mean (%)"], summary),
              Table(["condition", "seed", "status", "memorisation gap", "detail", "fork allowed"], rows)]
    if missing:
        blocks.append(Para(f"{len(missing)} finished trial(s) have no policy audit: "
                           + ", ".join(f"trial {t.number}" for t in missing), "warn"))
    return Section("Policies", blocks)
