import json
import os
from pathlib import Path

import pytest

from tests.commands.test_eval import runs
from tests.conftest import cli


def audit_json(home: Path, kind: str) -> dict:
    (path,) = (home / "audits").glob(f"{kind}-*/audit.json")
    return json.loads(path.read_text())


def test_first_tie_break_opponent_fails_with_exit_1_and_is_tracked(home: Path) -> None:
    out = cli("audit", "opponent", "tie_break=first", check=False)
    assert out.returncode == 1, out.stderr
    assert "FAIL" in out.stdout and "tie_break.dominated_share" in out.stdout
    data = audit_json(home, "opponent")
    assert data["status"] == "FAIL"
    assert {c["name"]: c["status"] for c in data["checks"]}["tie_break.chi2_p"] == "FAIL"
    folder = next((home / "audits").glob("opponent-*"))
    page = (folder / "audit.html").read_text()
    assert "<svg" in page and "http" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert "| tie_break.entropy |" in (folder / "audit.md").read_text()
    (run,) = runs(home)
    assert run.data.tags["ttt.audit.status"] == "FAIL"
    assert run.data.metrics["audit/opponent/tie_break.dominated_share"] == 1.0
    assert run.data.metrics["audit/opponent/tie_break.dominated_share/status"] == 2.0
    artifacts = Path(run.info.artifact_uri.removeprefix("file://"))
    assert json.loads((artifacts / "audit" / "audit.json").read_text()) == data


def test_warn_only_never_fails_and_a_fair_opponent_passes(home: Path) -> None:
    warned = cli("audit", "opponent", "tie_break=first", "--warn-only", "tracking.enabled=false", check=False)
    assert warned.returncode == 0 and "FAIL:" in warned.stdout and "--warn-only: exit 0" in warned.stdout
    out = cli("audit", "opponent", "tracking.enabled=false")
    assert "opponent audit PASS" in out.stdout


def test_user_class_through_target(home: Path) -> None:
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).parents[2]))
    out = cli("audit", "opponent", "opponent._target_=tests.audit.user_opponents.FirstChoiceOpponent",
              "tracking.enabled=false", check=False, env=env)
    assert out.returncode == 1, out.stderr
    assert audit_json(home, "opponent")["subject"].startswith("<tests.audit.user_opponents.FirstChoiceOpponent")


def test_dataset_audit_of_iid_phases_fails_and_stratified_passes(home: Path) -> None:
    ok = cli("audit", "dataset", "steps=4", "tracking.enabled=false")
    assert "dataset audit PASS" in ok.stdout
    bad = cli("audit", "dataset", "steps=4", "dataset.sampling=iid", "tracking.enabled=false", check=False)
    assert bad.returncode == 1
    assert "stratum_balance" in bad.stdout


def test_policy_audit_of_the_minimax_player_passes(home: Path) -> None:
    out = cli("audit", "policy", "player=minimax", "audit.policy.games=20", "tracking.enabled=false")
    assert "policy audit PASS" in out.stdout


def test_bad_input_is_one_clear_error(home: Path) -> None:
    out = cli("audit", "opponents", check=False)
    assert out.returncode == 2 and "Unknown audit 'opponents'" in out.stderr
    out = cli("audit", "dataset", "--file", str(home / "nope.jsonl"), check=False)
    assert out.returncode == 2 and "No dataset file" in out.stderr
    out = cli("audit", "opponent", "opponent._target_=no.such.Opponent", check=False)
    assert out.returncode == 2 and "opponent._target_" in out.stderr
    assert not (home / "audits").exists()


def test_policy_audit_of_a_checkpoint(home: Path, tiny_checkpoint: Path) -> None:
    out = cli("audit", "policy", "player=hf", f"model.path={tiny_checkpoint}", "audit.policy.games=2",
              "env.think=off", "player.max_new_tokens=4", "tracking.enabled=false", check=False)
    data = audit_json(home, "policy")
    assert out.returncode == (1 if data["status"] == "FAIL" else 0), out.stderr
    # a greedy checkpoint's moves can be read off: the panel is walked exactly (one random tie-break member)
    assert data["subject"].startswith("HFPlayer") and data["data"]["mode"] == "exact"
    members = data["data"]["members"]
    assert len(members) == 11 and sum(m["training"] for m in members) == 2
    for m in members:
        assert m["held_rate"] == pytest.approx(m["win_rate"] + m["draw_rate"])
        assert m["win_rate"] + m["draw_rate"] + m["loss_rate"] + m["unexplored"] == pytest.approx(1.0)


def test_unreachable_tracking_server_is_a_clear_error_and_the_audit_is_kept(home: Path) -> None:
    from tests.conftest import free_port

    out = cli("audit", "opponent", f"tracking.uri=http://127.0.0.1:{free_port()}", "audit.opponent.seeds=4",
              check=False)
    assert out.returncode == 2 and "cannot reach the MLflow tracking server" in out.stderr
    assert len(audit_json(home, "opponent")["checks"]) == 11
