import pytest
from hypothesis import given
from hypothesis import strategies as st

from ttt_lab.env.parser import (
    INVALID_KINDS,
    NO_TAG,
    NOT_A_NUMBER,
    OCCUPIED,
    OK,
    OUT_OF_RANGE,
    UNCLOSED_TAG,
    feedback,
    parse,
)

EMPTY = "........."
BOARD = "X...O...."  # cells 0 and 4 taken


@pytest.mark.parametrize(
    ("text", "kind", "cell"),
    [
        ("<move>3</move>", OK, 3),
        ("<think>center is taken</think><move>8</move>", OK, 8),
        ("  <move>  5 \n</move>  ", OK, 5),
        ("<move>1</move> on second thought <move>2</move>", OK, 2),
        ("<move>2</move><move>0</move>", OCCUPIED, 0),
        ("<move>4</move>", OCCUPIED, 4),
        ("<move><move>3</move></move>", OK, 3),
        ("<move>3</move><move>5", UNCLOSED_TAG, None),
        ("<move>3", UNCLOSED_TAG, None),
        ("3</move>", NO_TAG, None),
        ("I play 3", NO_TAG, None),
        ("", NO_TAG, None),
        ("<MOVE>3</MOVE>", NO_TAG, None),
        ("<move></move>", NOT_A_NUMBER, None),
        ("<move>three</move>", NOT_A_NUMBER, None),
        ("<move>+3</move>", NOT_A_NUMBER, None),
        ("<move>3.0</move>", NOT_A_NUMBER, None),
        ("<move>\uff13</move>", NOT_A_NUMBER, None),  # full-width 3
        ("<move>\u0663</move>", NOT_A_NUMBER, None),  # Arabic-Indic 3
        ("<move>3\x00</move>", NOT_A_NUMBER, None),
        ("\x00<move>3</move>\x00", OK, 3),
        ("<move>-1</move>", OUT_OF_RANGE, None),
        ("<move>-0</move>", OUT_OF_RANGE, None),
        ("<move>9</move>", OUT_OF_RANGE, None),
        ("<move>10</move>", OUT_OF_RANGE, None),
        ("<move>007</move>", OK, 7),
        ("<move>" + "9" * 10_000 + "</move>", OUT_OF_RANGE, None),
    ],
)
def test_classification(text: str, kind: str, cell: int | None) -> None:
    p = parse(text, BOARD)
    assert p.kind == kind
    if kind != OCCUPIED:
        assert p.cell == cell
    else:
        assert p.cell == cell and p.cell is not None


def test_very_long_replies_parse_quickly_and_correctly() -> None:
    long_think = "<think>" + "hmm " * 250_000 + "</think><move>2</move>"
    assert len(long_think) > 1_000_000
    p = parse(long_think, EMPTY, "required")
    assert (p.kind, p.cell, p.format_ok) == (OK, 2, True)
    junk = "<move>" * 200_000
    assert parse(junk, EMPTY).kind == UNCLOSED_TAG
    assert parse("x" * 1_000_000, EMPTY).kind == NO_TAG


@pytest.mark.parametrize(
    ("text", "think", "ok"),
    [
        ("<think>a</think><move>3</move>", "required", True),
        ("<move>3</move>", "required", False),
        ("<move>3</move>", "optional", True),
        ("<think>a</think>\n<move>3</move>\n", "optional", True),
        ("<think>a</think><move>3</move>", "off", False),
        ("<move>3</move>", "off", True),
        ("<move>1</move><move>3</move>", "optional", False),
        ("<think>a</think><think>b</think><move>3</move>", "required", False),
        ("<move>3</move> trailing words", "optional", False),
        ("preamble <move>3</move>", "optional", False),
        ("<think>unclosed <move>3</move>", "required", False),
        ("<move>12</move>", "optional", False),
    ],
)
def test_format_check(text: str, think: str, ok: bool) -> None:
    assert parse(text, EMPTY, think).format_ok is ok


@given(st.text(max_size=300), st.sampled_from(["required", "optional", "off"]))
def test_parsing_never_raises_and_always_classifies(text: str, think: str) -> None:
    p = parse(text, BOARD, think)
    assert p.kind in (OK, *INVALID_KINDS)
    if p.kind == OK:
        assert BOARD[p.cell] == "."
        assert text.rstrip().endswith("</move>") or "</move>" in text
    else:
        assert feedback(p).startswith("Invalid move:")


@given(st.text(alphabet="<>/movethink0123456789 -\n", max_size=80))
def test_tag_soup_never_raises(text: str) -> None:
    p = parse(text, EMPTY)
    assert p.kind in (OK, *INVALID_KINDS)


@given(st.text(max_size=50).filter(lambda s: "<move>" not in s and "</move>" not in s),
       st.text(max_size=50).filter(lambda s: "<move>" not in s), st.integers(0, 8))
def test_the_last_complete_tag_decides(prefix: str, suffix: str, cell: int) -> None:
    p = parse(f"{prefix}<move>{cell}</move>{suffix}", EMPTY)
    assert (p.kind, p.cell) == (OK, cell)


def test_non_string_reply_is_classified_not_raised() -> None:
    assert parse(None, EMPTY).kind == NO_TAG  # type: ignore[arg-type]


def test_feedback_names_the_problem() -> None:
    assert "cell 4 is already taken" in feedback(parse("<move>4</move>", BOARD))
    assert "0 to 8" in feedback(parse("<move>12</move>", BOARD))
    assert "not closed" in feedback(parse("<move>1", BOARD))
    assert "no <move>N</move> tag" in feedback(parse("1", BOARD))
    assert "not a cell number" in feedback(parse("<move>x</move>", BOARD))
