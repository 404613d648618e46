"""Reading a move from one model message. Parsing never raises and always classifies.

The move is read from the *last* `<move>` tag of the current message, up to the first
`</move>` after it; a last `<move>` that is never closed makes the reply invalid (the
model changed its mind and did not finish), and stray closing tags are ignored. Only
ASCII digits count as a number, so full-width or other Unicode digits are "not a number".
The format check is separate: a reply is in format when it is exactly
[<think>...</think>] <move>N</move>, with one tag of each.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

OK = "ok"
NO_TAG = "no_tag"
UNCLOSED_TAG = "unclosed_tag"
NOT_A_NUMBER = "not_a_number"
OUT_OF_RANGE = "out_of_range"
OCCUPIED = "occupied"
INVALID_KINDS = (NO_TAG, UNCLOSED_TAG, NOT_A_NUMBER, OUT_OF_RANGE, OCCUPIED)

_OPEN, _CLOSE = "<move>", "</move>"
_INTEGER = re.compile(r"-?[0-9]+", re.ASCII)
_FORMATS = {
    "required": re.compile(r"\s*<think>.*?</think>\s*<move>\s*[0-9]\s*</move>\s*", re.DOTALL),
    "optional": re.compile(r"\s*(?:<think>.*?</think>\s*)?<move>\s*[0-9]\s*</move>\s*", re.DOTALL),
    "off": re.compile(r"\s*<move>\s*[0-9]\s*</move>\s*", re.DOTALL),
}

_FEEDBACK = {
    NO_TAG: "Invalid move: no <move>N</move> tag found. Give your move as <move>N</move>.",
    UNCLOSED_TAG: "Invalid move: your last <move> tag is not closed. Give your move as <move>N</move>.",
    NOT_A_NUMBER: "Invalid move: the text inside <move></move> is not a cell number. "
    "Write one number from 0 to 8.",
    OUT_OF_RANGE: "Invalid move: that number is not a cell; cells are numbered 0 to 8.",
}


@dataclass(frozen=True, slots=True)
class Parsed:
    kind: str
    """OK or one of INVALID_KINDS."""
    cell: int | None
    format_ok: bool

    @property
    def valid(self) -> bool:
        return self.kind == OK


def in_format(text: str, think: str) -> bool:
    if text.count(_OPEN) != 1 or text.count("<think>") > 1:
        return False
    return _FORMATS[think].fullmatch(text) is not None


def _read_cell(content: str) -> tuple[str, int | None]:
    content = content.strip()
    if not _INTEGER.fullmatch(content):
        return NOT_A_NUMBER, None
    digits = content.lstrip("0") or "0"
    if content.startswith("-") or len(digits) > 1 or digits == "9":
        return OUT_OF_RANGE, None
    return OK, int(digits)


def parse(text: str, board: str, think: str = "optional") -> Parsed:
    """Classify `text` as a move on `board` (core notation; '.' marks an empty cell)."""
    if not isinstance(text, str):
        return Parsed(NO_TAG, None, False)
    fmt = in_format(text, think)
    start = text.rfind(_OPEN)
    if start < 0:
        return Parsed(NO_TAG, None, fmt)
    start += len(_OPEN)
    end = text.find(_CLOSE, start)
    if end < 0:
        return Parsed(UNCLOSED_TAG, None, fmt)
    kind, cell = _read_cell(text[start:end])
    if kind == OK and cell is not None and board[cell] != ".":
        return Parsed(OCCUPIED, cell, fmt)
    return Parsed(kind, cell, fmt)


def feedback(parsed: Parsed) -> str:
    """The line the environment answers an invalid move with."""
    if parsed.kind == OCCUPIED:
        return f"Invalid move: cell {parsed.cell} is already taken. Choose one of the available positions."
    return _FEEDBACK[parsed.kind]
