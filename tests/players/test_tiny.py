"""The tiny tokenizer: lossless, one token per board cell, and the rollout engine's
turn-by-turn token ids equal the whole conversation's (what SFT trains on)."""

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ttt_lab.env import prompts
from ttt_lab.env.dataset import Example
from ttt_lab.env.episode import Episode
from ttt_lab.env.settings import EnvConfig
from ttt_lab.game.opponents import RandomOpponent
from ttt_lab.players.tiny import build_tokenizer
from ttt_lab.train.generation import ChatTokens

pytestmark = pytest.mark.xdist_group("tiny-tokenizer")

boards = st.lists(st.sampled_from("XO."), min_size=9, max_size=9).map("".join)
replies = st.one_of(st.integers(0, 8).map(lambda c: f"<move>{c}</move>"),
                    st.sampled_from(["", "4", "<move>x</move>", "<move>12</move>", "X | 1 | O", "<move>4"]))


@pytest.fixture(scope="module")
def tok():
    return build_tokenizer()


@settings(max_examples=200, deadline=None)
@given(board=boards, cell=st.integers(0, 8))
def test_a_board_and_its_free_cells_are_one_token_per_cell_and_decode_to_their_text(tok, board: str,
                                                                                   cell: int) -> None:
    text = prompts.turn_message(board, prompts.opponent_status("X", cell))
    ids = tok(text, add_special_tokens=False)["input_ids"]
    assert tok.decode(ids) == text
    tokens = tok.convert_ids_to_tokens(ids)
    assert tokens[:3] == ["Your opponent (O) played ", str(cell), ".\n\n"]
    grid = tokens[3 : tokens.index("Available positions:")]
    assert [t.rstrip(" |\n") for t in grid] == [s if s != "." else str(i) for i, s in enumerate(board)]
    free = tokens[tokens.index("Available positions:") + 1 : tokens.index("\nYour turn.")]
    assert [t.lstrip(", ") for t in free if t.strip()] == [str(i) for i, s in enumerate(board) if s == "."]


@given(cell=st.integers(0, 8))
def test_a_move_is_one_token(tok, cell: int) -> None:
    assert tok.convert_ids_to_tokens(tok(f"<move>{cell}</move>", add_special_tokens=False)["input_ids"]) == [
        f"<move>{cell}</move>"]


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32), first=st.booleans(), think=st.sampled_from(["off", "optional"]),
       said=st.lists(replies, min_size=1, max_size=8), symbol=st.sampled_from("XO"))
def test_turn_by_turn_ids_are_the_whole_conversations_ids(tok, seed: int, first: bool, think: str,
                                                          said: list[str], symbol: str) -> None:
    """A reply ends with the model's end-of-turn token, as a sampled reply does; the environment's
    tokens after it come from `ChatTokens.after_reply`, as in `rollout.play_games`."""
    chat = ChatTokens(tok)
    example = Example(index=0, seed=seed, p_random=0.5, model_first=first, model_symbol=symbol, stratum=-1)
    ep = Episode(example, EnvConfig(think=think, max_model_turns=8), RandomOpponent(), seed)
    ids, rendered = chat.prompt(ep.messages), chat.render(ep.messages)
    for reply in said:
        ids += [*chat.encode(reply), chat.eos]
        ep.step(reply)
        if ep.done:
            break
        env_ids, rendered = chat.after_reply(ep.messages, True, rendered)
        ids += env_ids
    if not ep.done:
        assert ids == chat.prompt(ep.messages)


def test_the_compact_tokenizer_writes_a_game_in_half_the_tokens_of_the_word_level_one(tok) -> None:
    """`model.tokens=words` is the tokenizer of earlier releases (the benchmark's baseline)."""
    words = build_tokenizer("words")
    chat = ChatTokens(tok)
    example = Example(index=0, seed=3, p_random=1.0, model_first=True, model_symbol="X", stratum=-1)
    ep = Episode(example, EnvConfig(think="off", max_model_turns=6), RandomOpponent(), 3)
    for cell in range(9):
        if not ep.done:
            ep.step(f"<move>{cell}</move>")
    text = chat.render(ep.messages)
    short, long = (t(text, add_special_tokens=False)["input_ids"] for t in (tok, words))
    assert tok.decode(short) == words.decode(long) == text
    assert 2 * len(short) < len(long)


def test_an_unknown_tokenizer_is_refused_with_the_choices() -> None:
    from ttt_lab.config.load import load
    from ttt_lab.errors import InvalidSetting

    with pytest.raises(InvalidSetting, match=re.escape("'model.tokens': 'bytes'. Allowed: compact | words")):
        load(["tokens=bytes"])
