"""The tiny tokenizers: lossless, one token per board row (`rows`, the default) or per board
cell (`compact`), and the rollout engine's turn-by-turn token ids equal the whole
conversation's (what SFT trains on)."""

import functools
import re

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from ttt_lab.engine.generation import ChatTokens, _Memo
from ttt_lab.env import prompts
from ttt_lab.env.dataset import Example
from ttt_lab.env.episode import Episode
from ttt_lab.env.settings import EnvConfig
from ttt_lab.game.opponents import RandomOpponent
from ttt_lab.players.tiny import build_tokenizer

pytestmark = pytest.mark.xdist_group("tiny-tokenizer")
tokenizer = functools.cache(build_tokenizer)

boards = st.lists(st.sampled_from("XO."), min_size=9, max_size=9).map("".join)
replies = st.one_of(st.integers(0, 8).map(lambda c: f"<move>{c}</move>"),
                    st.sampled_from(["", "4", "<move>x</move>", "<move>12</move>", "X | 1 | O", "<move>4"]))


@pytest.fixture(scope="module")
def tok():
    return tokenizer("rows")


@pytest.fixture(scope="module")
def compact():
    return tokenizer("compact")


@settings(max_examples=200, deadline=None)
@given(board=boards, cell=st.integers(0, 8), shown=st.sampled_from("XO"))
def test_a_board_row_and_a_rows_free_cells_are_one_token_each(tok, board: str, cell: int, shown: str) -> None:
    assume("." in board)  # a turn message always lists a free cell
    text = prompts.turn_message(board, prompts.opponent_status(shown, cell))
    ids = tok(text, add_special_tokens=False)["input_ids"]
    assert tok.decode(ids) == text
    tokens = tok.convert_ids_to_tokens(ids)
    assert tokens[0] == prompts.opponent_status(shown, cell)
    cells = [s if s != "." else str(i) for i, s in enumerate(board)]
    rows = [" | ".join(cells[r : r + 3]) for r in (0, 3, 6)]
    assert tokens[1:4] == [f"\n\n{rows[0]}\n", f"{rows[1]}\n", f"{rows[2]}\n\n"]
    free = [[str(i) for i in range(r, r + 3) if board[i] == "."] for r in (0, 3, 6)]
    listed = [", ".join(f) for f in free if f]
    assert tokens[4:] == [f"Available positions: {listed[0]}", *[f", {x}" for x in listed[1:]], "\nYour turn."]


def test_the_first_row_never_reads_like_the_second(tok) -> None:
    """Rows 0 and 1 with no free cell have the same text; the first row's token carries the
    blank line before it."""
    first, second = (tok(prompts.turn_message(b, ""), add_special_tokens=False)["input_ids"][i]
                     for b, i in (("XOX......", 0), ("...XOX...", 1)))
    assert first != second


@settings(max_examples=200, deadline=None)
@given(board=boards, cell=st.integers(0, 8))
def test_compact_reads_a_board_and_its_free_cells_one_token_per_cell(compact, board: str, cell: int) -> None:
    text = prompts.turn_message(board, prompts.opponent_status("X", cell))
    ids = compact(text, add_special_tokens=False)["input_ids"]
    assert compact.decode(ids) == text
    tokens = compact.convert_ids_to_tokens(ids)
    assert tokens[:3] == ["Your opponent (O) played ", str(cell), ".\n\n"]
    grid = tokens[3 : tokens.index("Available positions:")]
    assert [t.rstrip(" |\n") for t in grid] == [s if s != "." else str(i) for i, s in enumerate(board)]
    free = tokens[tokens.index("Available positions:") + 1 : tokens.index("\nYour turn.")]
    assert [t.lstrip(", ") for t in free if t.strip()] == [str(i) for i, s in enumerate(board) if s == "."]


@pytest.mark.parametrize("kind", ["rows", "compact"])
@given(cell=st.integers(0, 8))
def test_a_move_is_one_token(kind: str, cell: int) -> None:
    tok = tokenizer(kind)
    assert tok.convert_ids_to_tokens(tok(f"<move>{cell}</move>", add_special_tokens=False)["input_ids"]) == [
        f"<move>{cell}</move>"]


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32), first=st.booleans(), think=st.sampled_from(["off", "optional"]),
       said=st.lists(replies, min_size=1, max_size=8), symbol=st.sampled_from("XO"))
@pytest.mark.parametrize("kind", ["rows", "compact", "words"])
@pytest.mark.parametrize("memo", [True, False])
def test_turn_by_turn_ids_are_the_whole_conversations_ids(kind: str, memo: bool, seed: int, first: bool, think: str,
                                                          said: list[str], symbol: str) -> None:
    """A reply ends with the model's end-of-turn token, as a sampled reply does; the environment's
    tokens after it come from `ChatTokens.after_reply`, as in `rollout.play_games`: from a fresh memo
    (every turn a miss, rendered after a stand-in history) or, without one, from the whole game's rendering."""
    chat = ChatTokens(tokenizer(kind))
    chat._memo = _Memo() if memo else None
    example = Example(index=0, seed=seed, p_random=0.5, model_first=first, model_symbol=symbol, stratum=-1)
    ep = Episode(example, EnvConfig(think=think, max_model_turns=8), RandomOpponent(), seed)
    ids, rendered = chat.start(ep.messages)
    assert ids == chat.prompt(ep.messages) and ids == chat.start(ep.messages)[0]
    assert (rendered is None) == memo
    for reply in said:
        ids += [*chat.encode(reply), chat.eos]
        ep.step(reply)
        if ep.done:
            break
        env_ids, rendered = chat.after_reply(ep.messages, True, rendered)
        ids += env_ids
    if not ep.done:
        assert ids == chat.prompt(ep.messages)


def test_each_tokenizer_writes_a_game_in_less_than_half_the_tokens_of_the_one_before(tok, compact) -> None:
    """`model.tokens=words` is the tokenizer of the first releases (the benchmark's baseline)."""
    words = tokenizer("words")
    chat = ChatTokens(tok)
    example = Example(index=0, seed=3, p_random=1.0, model_first=True, model_symbol="X", stratum=-1)
    ep = Episode(example, EnvConfig(think="off", max_model_turns=6), RandomOpponent(), 3)
    for cell in range(9):
        if not ep.done:
            ep.step(f"<move>{cell}</move>")
    text = chat.render(ep.messages)
    rows, cells, long = (t(text, add_special_tokens=False)["input_ids"] for t in (tok, compact, words))
    assert tok.decode(rows) == compact.decode(cells) == words.decode(long) == text
    assert 2 * len(rows) < len(cells) and 2 * len(cells) < len(long)


def test_an_unknown_tokenizer_is_refused_with_the_choices() -> None:
    from ttt_lab.config.load import load
    from ttt_lab.errors import InvalidSetting

    with pytest.raises(InvalidSetting, match=re.escape("'model.tokens': 'bytes'. Allowed: rows | compact | words")):
        load(["tokens=bytes"])
