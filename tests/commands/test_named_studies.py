"""Named studies from ./sweeps, the user's config folders and the package; `sweep --list`; a name
clash; shell completion of keys, group options and study names."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.conftest import BIN, cli
from ttt_lab.completion import override_candidates
from ttt_lab.studies import named
from ttt_lab.studies.spec import StudyError

STUDY = "name: {name}\nquestion: Mine?\nparams: {{seed: '0,1'}}\noverrides: [experiment=smoke]\n"


def test_lookup_order_origin_and_a_clash(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    mine = tmp_path / "presets"
    (mine / "sweeps").mkdir(parents=True)
    (mine / "sweeps" / "my_study.yaml").write_text(STUDY.format(name="my_study"))
    monkeypatch.setenv("TTT_LAB_CONFIG_DIR", str(mine))
    studies = named.all_studies()
    assert studies["my_study"][0].origin == f"config folder {mine}"
    assert studies["quickstart"][0].origin == "package"
    assert named.find("my_study") == mine / "sweeps" / "my_study.yaml"
    (tmp_path / "sweeps").mkdir()
    (tmp_path / "sweeps" / "my_study.yaml").write_text(STUDY.format(name="my_study"))  # the same content
    assert named.find("my_study") == Path("sweeps/my_study.yaml").absolute()
    (tmp_path / "sweeps" / "my_study.yaml").write_text(STUDY.format(name="other"))
    with pytest.raises(StudyError, match=r"'my_study' is defined differently in more than one place: .*\(\./sweeps\);"
                                         r" .*\(config folder .*\)\. Give the file's path"):
        named.find("my_study")
    listed = cli("sweep", "--list")
    assert "CLASH" in listed.stdout and "quickstart" in listed.stdout and "package" in listed.stdout
    clash = cli("sweep", "my_study", "--dry-run", check=False)
    assert clash.returncode == 2 and "defined differently" in clash.stderr


def test_a_bare_study_name_runs_and_an_unknown_one_lists_the_studies(home: Path) -> None:
    dry = " ".join(cli("sweep", "quickstart", "--dry-run").stdout.split())
    assert "quickstart" in dry and "margin ±" in dry and "seeds " in dry, dry[-600:]  # the design, as drawn
    out = cli("sweep", "nosuch", "--dry-run", check=False)
    assert out.returncode == 2 and "no study file nosuch" in out.stderr and "quickstart.yaml" in out.stderr


def test_completion_offers_keys_short_names_group_options_and_studies() -> None:
    assert "batch_size=" in override_candidates("bat")
    assert "train.phases.0.batch_size=" in override_candidates("train.phases.0.b")
    tiny = override_candidates("experiment=tiny")
    assert {"experiment=tiny_cpu", "experiment=tiny_cpu_long", "experiment=tiny_cpu_study"} <= set(tiny)
    assert all(c.startswith("experiment=tiny") for c in tiny) and tiny == sorted(tiny)
    env = dict(os.environ, _TTT_LAB_COMPLETE="complete_bash", COMP_WORDS="ttt-lab sweep qu", COMP_CWORD="2")
    out = subprocess.run([str(BIN)], env=env, capture_output=True, text=True, timeout=60)
    assert out.stdout.split() == ["quickstart"]
    env.update(COMP_WORDS="ttt-lab train experiment=tiny_cpu", COMP_CWORD="2")
    out = subprocess.run([str(BIN)], env=env, capture_output=True, text=True, timeout=60)
    assert "experiment=tiny_cpu" in out.stdout.split()
