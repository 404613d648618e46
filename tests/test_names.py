"""Names that become folders stay under the home."""

def test_names_stay_under_the_home(tmp_path) -> None:
    import pytest

    from ttt_lab.errors import TttLabError
    from ttt_lab.names import check_name, under

    assert check_name("study name", "batch-size_2.v1") == "batch-size_2.v1"
    for bad in ("../x", "/abs", "a/b", "..", ".hidden", "", "a..b"):
        with pytest.raises(TttLabError, match="not a valid name"):
            check_name("study name", bad)
    assert under(tmp_path, "reports", "ok") == (tmp_path / "reports" / "ok").resolve()
    with pytest.raises(TttLabError, match="outside the home"):
        under(tmp_path, "reports", "../../elsewhere")
