"""The tiny tokenizer: lossless, one token per board cell, and the rollout engine's
turn-by-turn token ids equal the whole conversation's (what SFT trains on)."""

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
def test_a_board_is_one_token_per_cell_and_decodes_to_its_text(tok, board: str, cell: int) -> None:
    text = prompts.turn_message(board, prompts.opponent_status("X", cell))
    tokens = tok.convert_ids_to_tokens(tok(text, add_special_tokens=False)["input_ids"])
    assert tok.decode(tok(text, add_special_tokens=False)["input_ids"]) == text
    grid = tokens[tokens.index(".\n\n") + 1 : tokens.index("Available positions: ")]
    shown = [s if s != "." else str(i) for i, s in enumerate(board)]
    assert [t.rstrip(" |\n") for t in grid] == shown


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
