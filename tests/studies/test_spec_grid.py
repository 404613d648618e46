import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.named_plans import NAMES
from ttt_lab.studies.grid import expand, values
from ttt_lab.studies.plan import make_plan
from ttt_lab.studies.spec import StudyError, from_args, from_file

NAMED_PLANS = pytest.mark.xdist_group("named-plans")
"""Tests of every shipped study share its plan (`named_plans`): one test process runs them."""


def test_hydra_sweep_syntax_expands_to_the_cartesian_product():
    spec = from_args(["batch_size=64,128", "seed=range(0,3)", "experiment=smoke", "opponent=glob(minimax_f*)"])
    assert spec.kind == "grid" and spec.overrides == ["experiment=smoke"]
    trials = expand(spec)
    assert len(trials) == 2 * 3 * 2
    assert trials[0] == ["experiment=smoke", "batch_size=64", "seed=0", "opponent=minimax_fast"]
    assert values("x", "choice(a,b)") == ["a", "b"]


@given(st.lists(st.integers(1, 999), min_size=2, max_size=4, unique=True),
       st.lists(st.sampled_from(["a", "b", "c", "d"]), min_size=2, max_size=3, unique=True))
def test_expansion_is_every_combination_once(nums, names):
    spec = from_args([f"n={','.join(map(str, nums))}", f"s={','.join(names)}"], name="t")
    trials = expand(spec)
    assert trials == [[f"n={a}", f"s={b}"] for a, b in itertools.product(nums, names)]


def test_the_same_arguments_name_the_same_study():
    assert from_args(["batch_size=64,128"]).name == from_args(["batch_size=64,128"]).name
    assert from_args(["batch_size=64,128"]).name != from_args(["batch_size=64,256"]).name


def test_interval_makes_a_search_that_needs_a_trial_count():
    with pytest.raises(StudyError, match="n_trials"):
        from_args(["lr=interval(1e-5,1e-3)"])
    spec = from_args(["lr=tag(log, interval(1e-5,1e-3))", "experiment=smoke"], n_trials=3)
    plan = make_plan(spec)
    (dist,) = plan.distributions.values()
    assert dist.log and dist.low == 1e-5


@pytest.mark.parametrize(("args", "message"), [
    (["no_such_key=1,2"], "no_such_key"),
    (["batch_size=7,8", "num_generations=4"], "multiple of"),
    (["loss_type=interval(0,1)"], "interval on a categorical field"),
])
def test_bad_studies_fail_before_any_trial(args, message):
    with pytest.raises(StudyError, match=message):
        make_plan(from_args(args, n_trials=2 if "interval" in args[0] else None))


def test_empty_grid_and_nothing_to_sweep():
    with pytest.raises(StudyError, match="Nothing to sweep"):
        from_args(["batch_size=64"])
    with pytest.raises(StudyError, match="no values"):
        values("opponent", "glob(nothing*)")


@NAMED_PLANS
def test_named_studies_parse_and_plan(tmp_path, named_plans):
    assert {"batch_size", "curriculum", "ablations", "search", "quickstart"} <= set(NAMES)
    for name in NAMES:
        plan = named_plans.plan(name)  # from_file, then make_plan: every grid trial's config composed
        assert plan.trials or plan.distributions, name
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\nparams: {}\n")
    with pytest.raises(StudyError, match="params"):
        from_file(bad, [])


@pytest.mark.parametrize(("entry", "message"), [
    ("sampler: {name: tpe, n_startup_trails: 3}", r"tpe sampler has no setting n_startup_trails \(it takes: seed, "),
    ("sampler: {name: random, multivariate: true}", "random sampler has no setting multivariate"),
    ("sampler: {name: cmaes}", "sampler 'cmaes' is not one of tpe, random, grid"),
    ("pruner: {name: median, lower: 0.5}", "median pruner has no setting lower"),
    ("pruner: {name: none, n_warmup_steps: 3}", r"it takes: no settings"),
])
def test_a_misspelt_sampler_or_pruner_setting_is_refused(tmp_path, entry, message):
    path = tmp_path / "s.yaml"
    path.write_text(f"name: s\nkind: search\nn_trials: 2\nparams: {{lr: 'interval(1e-5, 1e-3)'}}\n{entry}\n")
    with pytest.raises(StudyError, match=message):
        from_file(path, [])


def test_every_known_setting_reaches_the_sampler(tmp_path):
    from ttt_lab.studies.sampling import sampler

    path = tmp_path / "s.yaml"
    path.write_text("name: s\nkind: search\nn_trials: 2\nparams: {lr: 'interval(1e-5, 1e-3)'}\n"
                    "sampler: {name: tpe, seed: 1, n_startup_trials: 7, multivariate: true, constant_liar: true}\n")
    inner = sampler(from_file(path, []))._inner
    assert (inner._n_startup_trials, inner._multivariate, inner._constant_liar) == (7, True, True)


_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-3, 600), st.text(max_size=12), st.floats(allow_nan=False))
_VALUES = st.recursive(_SCALARS, lambda inner: st.lists(inner, max_size=3)
                       | st.dictionaries(st.sampled_from(["metric", "direction", "name", "seed", "x"]), inner,
                                         max_size=3), max_leaves=6)
_KEYS = st.sampled_from(["name", "question", "params", "overrides", "kind", "n_trials", "sampler", "pruner",
                         "objective", "workers", "baseline", "unknown"])


@given(st.dictionaries(_KEYS, _VALUES, max_size=6) | st.text(max_size=40))
def test_any_study_file_is_a_spec_or_one_clear_error(tmp_path_factory, content):
    import yaml

    path = tmp_path_factory.mktemp("spec") / "study.yaml"
    path.write_text(content if isinstance(content, str) else yaml.safe_dump(content))
    try:
        spec = from_file(path, [])
    except StudyError as e:
        assert "\n" not in str(e).strip() and "Traceback" not in str(e)
    else:
        assert spec.params and all(isinstance(v, str) for v in spec.params.values())
        assert all(isinstance(o, str) for o in spec.overrides) and spec.workers >= 1


def test_a_study_file_with_a_yaml_syntax_error_names_the_file(tmp_path):
    path = tmp_path / "broken.yaml"
    path.write_text("name: [unclosed\nparams: {a: 1}\n")
    with pytest.raises(StudyError, match=r"cannot read the study file .*broken\.yaml"):
        from_file(path, [])


@NAMED_PLANS
def test_studies_keep_the_first_phase_and_warm_up_their_findings_were_measured_with(named_plans):
    """tiny_cpu trains against every strength after a warm-up with DAgger rounds; the studies in
    sweeps/ on experiment=tiny_cpu_study were measured (docs/findings/) with the published first
    phase (30-100 % random moves) after a two-epoch warm-up through TRL's loop, no DAgger, and
    keep both unless the study varies them."""
    from ttt_lab.config.load import load

    tiny = load(["experiment=tiny_cpu"]).cfg
    assert tiny.train.phases[0].p_min == 0.0 and tiny.train.sft.dagger_rounds > 0
    checked = []
    for name in NAMES:
        plan = named_plans.plan(name)
        spec = plan.spec
        if "experiment=tiny_cpu_study" not in spec.overrides:
            continue
        cfg = plan.base.cfg  # load(spec.overrides)
        assert (cfg.train.sft.epochs, cfg.train.sft.loop, cfg.train.sft.dagger_rounds) == (2, "trl", 0), name
        if "train.phases.0.p_min" not in spec.params:
            assert cfg.train.phases[0].p_min == 0.3, name
            checked.append(name)
    assert {"batch_size", "ablations", "search", "quickstart", "memorisation"} <= set(checked)


@NAMED_PLANS
def test_every_finding_still_resolves_to_the_configs_its_trials_ran(named_plans):
    """A finding's results.csv records each trial's overrides and config hash: the study file
    and the presets it names (experiment=tiny_cpu_study above all, which restates what the
    findings ran while tiny_cpu moves on) must still resolve to those configs, or rerunning the
    finding would train something else."""
    import csv
    import re

    from ttt_lab.config.load import conf_dir

    root = conf_dir().parent
    found = sorted((root / "docs" / "findings").rglob("results.csv"))
    assert len(found) >= 4
    for results in found:
        study = re.search(r"^# ttt-lab report: (\S+)", (results.parent / "report.md").read_text(), re.M).group(1)
        spec = named_plans.plan(study).spec  # from_file(sweeps/STUDY.yaml)
        first = {}  # one trial per condition: a preset that drifted changes every trial's config
        for row in csv.DictReader(results.open()):
            first.setdefault(row["condition"], row)
        for row in first.values():  # load(...), composed once with the study's plan
            got = named_plans.load(study, [*spec.overrides, *row["overrides"].split()]).config_hash
            assert got == row["config_hash"], (results, row["overrides"])


@pytest.mark.parametrize("expr", ["{'metric': 'x'}", "a=b,c", "range(0,"])
def test_values_that_are_not_sweep_syntax_are_one_clear_error(expr: str) -> None:
    """Found by the CLI fuzzer: a study file whose param holds a mapping crashed Hydra's parser."""
    from ttt_lab.studies.grid import values
    from ttt_lab.studies.spec import StudyError

    with pytest.raises(StudyError, match="not Hydra sweep syntax"):
        values("batch_size", expr)


def test_an_audit_objective_needs_the_trials_to_audit_themselves(tmp_path):
    study = tmp_path / "gap.yaml"
    body = ("name: gap\noverrides: [experiment=smoke, audit.policy.in_studies={on}]\nparams:\n  seed: 0,1\n"
            "objective: {{metric: audit/policy/memorisation.gap, direction: minimize}}\n")
    study.write_text(body.format(on="true"))
    assert len(make_plan(from_file(study, [])).trials) == 2
    study.write_text(body.format(on="false"))
    with pytest.raises(StudyError, match=r"audit\.policy\.in_studies=false turns that audit off"):
        make_plan(from_file(study, []))
    study.write_text(body.format(on="true").replace("audit/policy/", "audit_policy/"))
    with pytest.raises(StudyError, match=r"not a final evaluation metric.*audit/policy/memorisation\.gap"):
        make_plan(from_file(study, []))


def test_a_best_response_objective_needs_an_exact_evaluation(tmp_path):
    study = tmp_path / "unbeaten.yaml"
    body = ("name: unbeaten\noverrides: [experiment=smoke{more}]\nparams:\n  seed: 0,1\nobjective:\n"
            "  - {{metric: eval/exploitability, direction: minimize}}\n"
            "  - {{metric: eval/exploiter/draw_rate, direction: maximize}}\n")
    study.write_text(body.format(more=""))
    assert len(make_plan(from_file(study, [])).trials) == 2
    study.write_text(body.format(more=", eval.mode=sampled"))
    with pytest.raises(StudyError, match=r"only an exact evaluation computes, but eval\.mode=sampled"):
        make_plan(from_file(study, []))
