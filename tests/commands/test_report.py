import json
from pathlib import Path

import pytest

from tests.conftest import FAILING_SWEEP, cli
from tests.studies.helpers import split_runs
from ttt_lab.stats.rates import mean_interval
from ttt_lab.studies.spec import from_args

pytestmark = pytest.mark.xdist_group("report")
ARGS = ["batch_size=8,16", "seed=0,1", "experiment=smoke", "steps=2", "train.eval_every=1",
        "audit.policy.in_studies=true"]


@pytest.fixture(scope="session")
def swept_home(tmp_path_factory: pytest.TempPathFactory, shared_home: Path) -> Path:
    """One real sweep shared by this module's tests (a sweep costs ~20 s)."""
    import os
    import shutil

    h = tmp_path_factory.mktemp("report") / "runs"
    shutil.copytree(shared_home, h)
    cli("sweep", *ARGS, env=dict(os.environ, TTT_LAB_HOME=str(h)))
    return h


@pytest.fixture
def swept(swept_home: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("TTT_LAB_HOME", str(swept_home))
    return from_args(ARGS).name


def test_report_of_a_real_sweep_matches_the_store(swept_home: Path, swept: str) -> None:
    home = swept_home
    out = cli("report", swept)
    index = home / "reports" / swept / "index.html"
    assert str(index) in out.stdout
    page = index.read_text()
    for title in ("Results", "Learning curves", "Stability flags", "Audits of the study", "Reproduce"):
        assert f"<h2>{title}" in page
    assert page.count("<svg") >= 16 and "http://" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "")
    _, children = split_runs(home, swept)
    from ttt_lab.formats import pct

    for bs in (8, 16):
        runs = [r for r in children if r.data.params["train.phases.0.batch_size"] == str(bs)]
        assert len(runs) == 2
        mean, lo, hi = mean_interval([r.data.metrics["eval/random/loss_rate"] for r in runs])
        assert f"{pct(mean)} [{pct(lo)}, {pct(hi)}]" in page
        for r in runs:
            assert f"ttt-lab reproduce {r.info.run_id}" in page
            assert r.data.tags["ttt.config_hash"] in page
    md = (home / "reports" / swept / "report.md").read_text()
    assert "## Results" in md and "](figures/" in md
    cli("report", swept, "--compare", swept)
    both = (home / "reports" / f"{swept}-vs-{swept}" / "index.html").read_text()
    assert "Config differences" in both and "No difference." in both


def test_an_unknown_study_is_a_clear_error(home: Path) -> None:
    out = cli("report", "no-such-study", check=False)
    assert out.returncode == 2 and "No study 'no-such-study'" in out.stderr  # (no finished trial: test_collect)


def test_a_report_out_that_is_a_file_is_refused_and_kept(home: Path) -> None:
    """A report is a folder: `--out` naming a file says so (exit 2) and leaves the file as it was."""
    taken = home.parent / "notes.txt"
    taken.write_text("mine")
    out = cli("report", "any-study", "--out", str(taken), check=False)
    assert out.returncode == 2 and "is a file: a report is a folder" in out.stderr and "Traceback" not in out.stderr
    assert taken.read_text() == "mine"


@pytest.mark.xdist_group("failing-sweep")
def test_partial_report_when_a_trial_failed(failing_sweep, monkeypatch: pytest.MonkeyPatch) -> None:
    home, _ = failing_sweep
    monkeypatch.setenv("TTT_LAB_HOME", str(home))
    args = FAILING_SWEEP
    out = cli("report", from_args(args).name)
    assert "PARTIAL" in out.stdout
    page = (home / "reports" / from_args(args).name / "index.html").read_text()
    assert "Partial report: trial 0" in page


def test_policy_audits_of_final_checkpoints_appear_in_the_report(swept_home: Path, swept: str) -> None:
    home = swept_home
    _, children = split_runs(home, swept)
    trial = children[0]
    checkpoint = trial.data.tags["ttt.checkpoint"]
    out = cli("audit", "policy", "experiment=smoke", "player=hf", f"model.path={checkpoint}", "audit.policy.games=2",
              check=False)
    (audit_file,) = (home / "audits").glob("policy-*/audit.json")
    audit = json.loads(audit_file.read_text())
    assert out.returncode == (1 if audit["status"] == "FAIL" else 0), out.stderr
    cli("report", swept)
    page = (home / "reports" / swept / "index.html").read_text()
    assert "Final policies (memorisation probe)" in page
    assert f"<td>{audit['status']}</td>" in page
    assert trial.data.tags["ttt.trial_overrides"].replace(" seed=0", "").replace(" seed=1", "") in page


def test_every_trial_audits_its_own_final_policy_and_the_report_shows_it(swept_home: Path, swept: str) -> None:
    _, children = split_runs(swept_home, swept)
    assert all(r.data.tags.get("ttt.policy_audit") in ("PASS", "WARN", "FAIL") for r in children)
    assert all("audit/policy/memorisation.gap" in r.data.metrics for r in children)
    from ttt_lab.report.collect import collect
    from ttt_lab.tracking.store import open_store

    study = collect(open_store(f"sqlite:///{swept_home}/mlflow.db", str(swept_home / "mlartifacts")), swept)
    assert set(study.policy_audits) == {r.info.run_id for r in children}
    audit = next(iter(study.policy_audits.values()))
    assert audit["data"]["mode"] == "exact"  # a greedy checkpoint: the panel walked on the exact tree
    assert all(0 <= m["held_lo"] <= m["held_rate"] <= m["held_hi"] <= 1 for m in audit["data"]["members"])


def test_each_trial_says_where_its_time_went_and_the_report_adds_it_up(swept_home: Path, swept: str) -> None:
    from ttt_lab.timing import PHASES

    _, children = split_runs(swept_home, swept)
    totals = dict.fromkeys(PHASES, 0.0)
    for r in children:
        m = r.data.metrics
        parts = {p: m[f"time/{p}_s"] for p in PHASES}
        assert parts["rl"] > 0 and parts["eval"] > 0 and parts["audit"] > 0 and parts["tracking"] > 0, parts
        assert sum(parts.values()) == pytest.approx(m["time/total_s"], abs=0.01)
        for p, v in parts.items():
            totals[p] += v
    # a worker's own start (imports, spawn) is charged to the first trial it ran, once
    assert 0 < sum(r.data.metrics["time/start_s"] > 0 for r in children) < len(children)
    cli("report", swept)
    md = (swept_home / "reports" / swept / "report.md").read_text()
    section = md.split("## Where the time went", 1)[1].split("\n## ", 1)[0]
    assert f"| RL | {totals['rl']:.0f} |" in section and "time_split.svg" in section
    assert f"| all phases | {sum(totals.values()):.0f} | 100 |" in section
    import re

    linked = re.findall(r"\]\((figures/[^)]+)\)", md)  # every figure the page links is written beside it
    assert "figures/time_split.svg" in linked
    assert all((swept_home / "reports" / swept / f).is_file() for f in linked), linked


def test_the_api_report_logs_its_files_on_the_parent_run(swept_home: Path, swept: str, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from mlflow import MlflowClient

    from ttt_lab import api
    from ttt_lab.tracking.store import find_parent, open_store

    logged: list[tuple[str, str, str | None]] = []
    monkeypatch.setattr(MlflowClient, "log_artifact",
                        lambda self, run_id, local, path=None: logged.append((run_id, Path(local).name, path)))
    result = api.report(swept, out=tmp_path / "report")
    parent = find_parent(open_store(f"sqlite:///{swept_home}/mlflow.db", str(swept_home / "mlartifacts")), swept)
    assert {("index.html", "report"), ("report.md", "report")} <= {(name, path) for _, name, path in logged}
    assert {run for run, _, _ in logged} == {parent.info.run_id}
    assert result.index == tmp_path / "report" / "index.html" and result.answer
