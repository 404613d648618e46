from pathlib import Path

import pytest

from ttt_lab.studies.command import study_spec
from ttt_lab.studies.spec import StudyError, StudySpec


def _spec(args: list[str], name: str | None, trials: int | None) -> StudySpec:
    return study_spec(args, name, trials)[0]


def test_the_projects_studies_are_found_by_name_from_any_directory(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert _spec(["batch_size.yaml"], None, None).name == "batch_size"
    assert _spec(["sweeps/quickstart.yaml", "seed=0"], None, None).name == "quickstart"
    with pytest.raises(StudyError, match=r"no study file elsewhere/batch_size\.yaml\. The project's studies .*"
                                         r"batch_size\.yaml, .*curriculum\.yaml"):
        _spec(["elsewhere/batch_size.yaml"], None, None)  # another folder is not silently replaced
    with pytest.raises(StudyError, match=r"no study file nothing\.yaml"):
        _spec(["nothing.yaml"], None, None)


def test_a_study_file_in_the_working_directory_comes_first(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "batch_size.yaml").write_text("name: mine\nparams: {seed: '0,1'}\noverrides: [experiment=smoke]\n")
    assert _spec(["batch_size.yaml"], None, None).name == "mine"
