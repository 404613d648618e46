import math

import pytest

from ttt_lab.report.collect import FINAL_METRICS, Study, Trial, condition_of
from ttt_lab.report.figures import aggregate, band_chart
from ttt_lab.report.render import build, results_rows, write
from ttt_lab.stats.rates import mean_interval


def trial(number: int, bs: int, seed: int, draw: float, reward_curve: list[float]) -> Trial:
    metrics = {m: 0.5 for m in FINAL_METRICS} | {"eval/optimal/draw_rate": draw}
    overrides = [f"batch_size={bs}", f"seed={seed}"]
    tags = {"ttt.command": f"ttt-lab train experiment=smoke {' '.join(overrides)}", "ttt.config_hash": f"h{number}",
            "mlflow.source.git.commit": "abc", "ttt.git_dirty": "false", "ttt.version.torch": "2.13.0"}
    curves = {"train/reward": [(i + 1, v) for i, v in enumerate(reward_curve)]}
    return Trial(f"run{number}", number, "FINISHED", "COMPLETE", overrides, condition_of(overrides), seed, bs,
                 metrics, tags, curves)


def study() -> Study:
    plateau = [0.2, 0.5, 0.8, 0.8, 0.81, 0.79, 0.8, 0.8]
    collapse = [0.2, 0.5, 0.8, 0.6, 0.3, 0.2, 0.2, 0.2]
    trials = [trial(0, 64, 0, 0.7, plateau), trial(1, 64, 1, 0.9, plateau), trial(2, 64, 2, 0.8, plateau),
              trial(3, 128, 0, 0.5, collapse), trial(4, 128, 1, 0.6, plateau)]
    tags = {"ttt.question": "Which batch size?", "ttt.params": '{"batch_size": "64,128", "seed": "0,1,2"}',
            "ttt.objectives": '[{"metric": "eval/optimal/draw_rate", "direction": "maximize"}]',
            "ttt.command": "ttt-lab sweep batch_size=64,128 seed=0,1,2", "ttt.config_hash": "base",
            "ttt.overrides": "experiment=smoke"}
    return Study("bs", "parent", tags, 0, trials)


def test_results_are_mean_and_t_interval_over_seeds_per_condition():
    rows = {r["condition"]: r for r in results_rows(study())}
    assert set(rows) == {"batch_size=64", "batch_size=128"}
    mean, lo, hi = rows["batch_size=64"]["eval/optimal/draw_rate"]
    assert mean == pytest.approx(0.8)
    t975 = 4.302652729911275  # Student t, 2 degrees of freedom, 97.5 %
    assert 0.8 + t975 * 0.1 / math.sqrt(3) > 1.0  # a rate: the t interval is clipped at 100 %
    assert (lo, hi) == pytest.approx((0.8 - t975 * 0.1 / math.sqrt(3), 1.0))
    assert rows["batch_size=64"]["seeds"] == 3
    assert rows["batch_size=64"]["best"].startswith("seed 1") and rows["batch_size=64"]["worst"].startswith("seed 0")
    assert mean_interval([0.3]) == (0.3, 0.3, 0.3)


def test_report_has_every_section_and_flags_the_collapsed_run(tmp_path):
    report = build(study(), with_audits=False)
    titles = [s.title for s in report.sections]
    assert titles == ["Study 'bs'", "Answer", "Results", "Learning curves", "Stability flags", "Where the time went",
                      "Reproduce"]
    stab = next(s for s in report.sections if s.title == "Stability flags")
    assert "collapse" in stab.html and stab.html.count("<tr>") == 1 + 1 + 1 + 6  # header, one flag, rules
    index, md, *_data = write(report, tmp_path)
    page = index.read_text()
    assert page.count("<svg") == len(report.svgs) > 0
    assert "ttt-lab reproduce run3" in page and "Published figures" in page
    assert "http://" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert all((tmp_path / "figures" / n).is_file() for n in report.svgs)
    assert "](figures/train_reward_steps.svg)" in md.read_text()


def test_band_chart_draws_one_line_and_band_per_series():
    agg = aggregate([[(1, 0.1), (2, 0.3)], [(1, 0.3), (2, 0.5)]], scale=64)
    assert agg == [(64, 0.2, 0.1, 0.3), (128, 0.4, 0.3, 0.5)]
    svg = band_chart("t", {"a": agg, "b": agg}, "games")
    assert svg.count("<polyline") == 2 and svg.count("<polygon") == 2
    assert "no data" in band_chart("t", {"a": []}, "x")


def test_compare_puts_two_studies_side_by_side_with_their_config_differences():
    from dataclasses import replace

    from ttt_lab.report.render import build_compare

    a = study()
    b = study()
    b.name = "bs2"
    b.trials = [replace(t, params={"seed": str(t.seed), "env.think": "off"}) for t in b.trials]
    a.trials = [replace(t, params={"seed": str(t.seed), "env.think": "required"}) for t in a.trials]
    report = build_compare(a, b)
    titles = [s.title for s in report.sections]
    assert titles[:3] == ["A: Study 'bs'", "B: Study 'bs2'", "Config differences"]
    diff = report.sections[2].markdown
    assert "| env.think | required | off |" in diff and "| seed |" not in diff
    results = next(s for s in report.sections if s.title == "Results").markdown
    assert "bs: batch_size=64" in results and "bs2: batch_size=128" in results


def seeded_study(draws: dict[str, list[float]], games: int = 100) -> Study:
    """A study whose conditions have the given final draw rates (one per seed) over `games` games."""
    trials = []
    for c, rates in draws.items():
        for seed, rate in enumerate(rates):
            t = trial(len(trials), int(c), seed, rate, [0.5] * 8)
            t.metrics |= {"eval/optimal/games": float(games), "eval/random/games": float(games)}
            trials.append(t)
    tags = {"ttt.objectives": '[{"metric": "eval/optimal/draw_rate", "direction": "maximize"}]'}
    return Study("s", "p", tags, 0, trials)


def test_one_seed_never_shows_a_zero_width_interval_and_the_games_give_one():
    report = build(seeded_study({"64": [0.72], "128": [0.86]}), with_audits=False)
    results = next(s for s in report.sections if s.title == "Results")
    assert "72.0 (1 seed)" in results.markdown and "72.0 [72.0, 72.0]" not in results.markdown
    from ttt_lab.stats.rates import wilson

    lo, hi = wilson(72, 100)
    assert f"72.0 [{100 * lo:.1f}, {100 * hi:.1f}]" in results.markdown
    answer = next(s for s in report.sections if s.title == "Answer").markdown
    assert "give the study seeds (seed=0,1,2)" in answer and "after 0 seeds" not in answer


def _draws(rng, p: float, seeds: int, games: int = 100) -> list[float]:
    return [sum(rng.random() < p for _ in range(games)) / games for _ in range(seeds)]


def _answer(study):
    from ttt_lab.report.render import Report, verdict_section

    report = Report(study)
    return verdict_section(report), report


def test_conditions_from_one_distribution_are_equivalent_or_unresolved_never_just_noise():
    import random

    rng = random.Random(7)
    section, report = _answer(seeded_study({str(b): _draws(rng, 0.8, 3) for b in (64, 128, 256)}))
    decisions = {c.decision for c in report.answer.comparisons}
    assert decisions <= {"equivalent", "unresolved"} and {c.mean_decision for c in report.answer.comparisons} <= {
        "equivalent", "unresolved"}
    assert "beyond noise" not in section.markdown
    for c in report.answer.comparisons:
        if c.decision == "unresolved":
            assert f"{c.condition} against {c.reference} is unresolved after 3 seeds" in section.markdown
            assert c.settle and all(n > 3 and 0 <= p <= 1 for n, p in c.settle)
    assert "decisions.svg" in report.svgs


def test_the_answer_names_a_real_difference_with_its_interval(tmp_path):
    import json
    import random

    from ttt_lab.report.render import build, write

    rng = random.Random(3)
    study3 = seeded_study({"64": _draws(rng, 0.3, 40), "128": _draws(rng, 0.9, 40), "256": _draws(rng, 0.9, 40)})
    section, report = _answer(study3)
    assert report.answer.reference in ("batch_size=128", "batch_size=256")
    by = {c.condition: c for c in report.answer.comparisons}
    low64 = by["batch_size=64"]
    assert low64.decision == "worse on most seeds" and low64.improvement_hi < 0.5 and low64.worse >= 35
    assert low64.mean_decision == "differs" and low64.hi < -0.05 and low64.paired
    assert f"{report.answer.reference} trained the better policy (higher eval/optimal/draw_rate) than batch_size=64 " \
           f"on {low64.worse} of 40 seeds: better on at least" in " ".join(section.markdown.split())
    assert "Mean difference of batch_size=64 (lower by more than the margin)" in section.markdown
    ref, low = study3.conditions()[report.answer.reference], study3.conditions()["batch_size=64"]
    first = 100 * (low[0].metrics["eval/optimal/draw_rate"] - ref[0].metrics["eval/optimal/draw_rate"])
    assert f"| 0 | {100 * ref[0].metrics['eval/optimal/draw_rate']:.1f} | {first:+.1f} |" in section.markdown
    paths = write(build(study3, with_audits=False), tmp_path)
    verdict = json.loads((tmp_path / "verdict.json").read_text())
    assert {c["condition"]: c["decision"] for c in verdict["comparisons"]}["batch_size=64"] == "worse on most seeds"
    assert set(verdict["comparisons"][0]) >= {"condition", "reference", "metric", "difference", "lo", "hi",
                                              "direction", "paired", "p", "margin", "decision", "seeds", "better",
                                              "worse", "ties", "improvement", "improvement_lo", "improvement_hi",
                                              "mean_decision", "if_agree", "settle", "procedure", "level",
                                              "mean_level", "differences"}
    assert verdict["procedure"] == "anytime" and verdict["error_spent"] == [0.05] and verdict["family"] == 3
    rows = (tmp_path / "results.csv").read_text().strip().splitlines()
    assert len(rows) == 1 + 120 and rows[0].startswith("trial,condition,seed,overrides")
    assert tmp_path / "verdict.json" in paths


def test_a_declared_baseline_is_the_reference_and_only_its_comparisons_share_alpha():
    study = seeded_study({"64": [0.8, 0.81, 0.79], "128": [0.9, 0.91, 0.89], "256": [0.85, 0.84, 0.86]})
    study.tags["ttt.baseline"] = "batch_size=64"
    _, report = _answer(study)
    assert report.answer.reference == "batch_size=64" and report.answer.declared
    assert report.answer.decisions.family == 2
    study.tags.pop("ttt.baseline")
    _, chosen = _answer(study)
    assert chosen.answer.reference == "batch_size=128" and chosen.answer.decisions.family == 3


def test_probability_of_improvement_follows_the_objectives_direction():
    from ttt_lab.stats.aggregates import aggregates

    by_cond = {"low": {s: 0.1 + 0.01 * s for s in range(6)}, "high": {s: 0.6 + 0.01 * s for s in range(6)}}
    lower_better = {g.condition: g for g in aggregates(by_cond, "high", maximize=False)}
    assert lower_better["low"].improvement == 1.0
    higher_better = {g.condition: g for g in aggregates(by_cond, "high")}
    assert higher_better["low"].improvement == 0.0


def test_no_bootstrap_interval_below_five_seeds_and_paired_arms_resample_together():
    from ttt_lab.stats.aggregates import aggregates

    few = {g.condition: g for g in aggregates({"a": {0: 0.8, 1: 0.9, 2: 0.85}, "b": {0: 0.1, 1: 0.2, 2: 0.3}}, "b")}
    assert few["a"].iqm_lo != few["a"].iqm_lo and few["a"].improvement_lo != few["a"].improvement_lo  # nan
    # paired: the arm beats the reference on every seed, though their ranges overlap
    ref = {s: 0.1 * s for s in range(8)}
    arm = {s: 0.1 * s + 0.05 for s in range(8)}
    g = {x.condition: x for x in aggregates({"arm": arm, "ref": ref}, "ref")}["arm"]
    assert g.improvement == 1.0 and g.improvement_lo == 1.0


def test_an_exact_mode_report_shows_exact_rates_and_bounds_without_a_wilson_interval():
    from ttt_lab.stats.rates import wilson

    s = seeded_study({"64": [0.75, 0.8], "128": [0.9, 0.85]})
    for t in s.trials:
        t.metrics["eval/mode"] = 1.0
        t.metrics["eval/optimal/draw_rate_lo"] = t.metrics["eval/optimal/draw_rate"] - 0.01
        t.metrics["eval/optimal/draw_rate_hi"] = t.metrics["eval/optimal/draw_rate"] + 0.01
    results = next(x for x in build(s, with_audits=False).sections if x.title == "Results").markdown
    lo, hi = wilson(155, 200)
    assert f"[{100 * lo:.1f}, {100 * hi:.1f}]" not in results
    assert "77.5 (bounds 76.5-78.5)" in results and "| exact |" in results


def test_a_study_without_policy_audits_says_so_and_one_with_them_shows_each_trial():
    from ttt_lab.report.audit_sections import policy_section

    s = study()
    assert "No policy audit of the final checkpoints in this study" in policy_section(s).markdown
    audit = {"status": "FAIL", "checks": [{"name": "memorisation.gap", "value": 0.4, "detail": "x"},
                                          {"name": "fork_allowed_rate", "value": 0.02}]}
    s.policy_audits = {s.trials[0].run_id: audit}
    md = policy_section(s).markdown
    assert "| batch_size=64 | 1 of 1 | +40.0 | 2.0 |" in md
    assert "4 finished trial(s) have no policy audit" in md


def test_a_stored_user_opponent_is_not_imported_without_trust_code(tmp_path, monkeypatch):
    """A shared tracking store names the study's opponent class; building it runs its code,
    so the report's audits skip it (saying how to opt in) unless --trust-code."""
    from ttt_lab.report.audit_sections import audits

    marker = tmp_path / "imported"
    (tmp_path / "stored_opponent_mod.py").write_text(
        f"open({str(marker)!r}, 'w').close()\n"
        "from tests.audit.user_opponents import FairOpponent as Opponent\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    s = study()
    s.tags["ttt.overrides"] = "experiment=smoke opponent._target_=stored_opponent_mod.Opponent"
    section = audits(s)
    assert "--trust-code" in section.markdown and not marker.exists()
    trusted = audits(s, trust_code=True)
    assert marker.exists() and "Opponent audit" in trusted.markdown


def test_aggregates_follow_agarwal_et_al_and_bound_what_they_estimate():
    import random

    from ttt_lab.stats.aggregates import aggregates, profile

    rng = random.Random(5)
    by_cond = {"a": {s: 0.9 + 0.01 * rng.random() for s in range(6)}, "b": {s: 0.5 + 0.01 * s for s in range(6)}}
    got = {g.condition: g for g in aggregates(by_cond, "b")}
    a = got["a"]
    assert a.iqm_lo <= a.iqm <= a.iqm_hi and 0.9 <= a.iqm <= 0.91
    assert a.improvement == 1.0 and a.improvement_lo == 1.0  # every run of a beats every run of b
    b = got["b"]
    assert b.improvement != b.improvement  # the reference is not compared with itself (nan)
    sorted_b = sorted(by_cond["b"].values())
    assert b.iqm == pytest.approx(sum(sorted_b[1:5]) / 4, abs=0.01)
    prof = profile(by_cond, points=11)
    assert prof["a"][0][1] == 1.0 and prof["b"][-1][1] == 0.0
    # shares fall as the threshold rises
    assert all(x[1] >= y[1] for x, y in zip(prof["b"], prof["b"][1:], strict=False))
