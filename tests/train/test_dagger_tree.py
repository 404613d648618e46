"""DAgger's choice of which mistakes to relabel (`train/dagger_tree.py`)."""

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from ttt_lab.config.schema import EnvConfig
from ttt_lab.env.dataset import Example
from ttt_lab.env.episode import Episode
from ttt_lab.game.opponents import RandomOpponent
from ttt_lab.game.solver import table
from ttt_lab.players.scripted import minimax_player
from ttt_lab.train.dagger_tree import examples, first_mistakes

from .conftest import cfg_for


def _tree(picks: list[list[int]], model_first: bool) -> list[tuple[list[dict[str, str]], int]]:
    """Every model-turn position of games whose model replies are `picks` (a cell index among the
    legal ones, or -1 for an invalid reply), sharing their openings like a walk's tree."""
    t, seen, out = table(), set(), []
    for line in picks:
        ep = Episode(Example(index=0, seed=0, p_random=1.0, model_first=model_first, model_symbol="X", stratum=-1),
                     EnvConfig(max_model_turns=6), RandomOpponent())
        for pick in line:
            if ep.done:
                break
            key = tuple(m["content"] for m in ep.messages)
            if key not in seen:
                seen.add(key)
                out.append((list(ep.messages), ep.state))
            legal = t.legal[ep.state]
            ep.step("no move" if pick < 0 else f"<move>{legal[pick % len(legal)]}</move>")
    return out


def _contents(messages) -> tuple[str, ...]:
    return tuple(m["content"] for m in messages)


@settings(max_examples=60, deadline=None)
@given(picks=st.lists(st.lists(st.integers(-1, 8), min_size=1, max_size=6), min_size=1, max_size=6),
       model_first=st.booleans(), marks=st.lists(st.booleans(), min_size=40, max_size=40))
def test_first_mistakes_keeps_each_lines_first_mistake_and_drops_those_below_one(
        picks: list[list[int]], model_first: bool, marks: list[bool]) -> None:
    """Kept: the mistakes with no mistake on the way to them; every dropped one lies below a kept one."""
    positions = _tree(picks, model_first)
    wrong = [p for p, m in zip(positions, marks, strict=False) if m]
    kept = first_mistakes(wrong)
    keys = {_contents(m) for m, _ in wrong}
    kept_keys = {_contents(m) for m, _ in kept}

    def ancestors(messages) -> list[tuple[str, ...]]:
        return [_contents(messages[:k]) for k, m in enumerate(messages) if m["role"] == "assistant"]

    assert [p for p in wrong if _contents(p[0]) in kept_keys] == kept  # a subset, in order
    for messages, _ in wrong:
        below = [a for a in ancestors(messages) if a in keys]
        assert (_contents(messages) in kept_keys) == (not below)
        if below:
            assert below[0] in kept_keys  # the line's first mistake is the one kept


def test_a_walk_relabels_the_mistakes_below_a_mistake_unless_switched_off(tiny_checkpoint: Path,
                                                                         tmp_path: Path) -> None:
    """`dagger_below_mistakes=false`: a mistake reached only through another relabelled reply is
    not trained on; the mistakes count still holds both."""
    from transformers import AutoTokenizer

    ep = Episode(Example(index=0, seed=0, p_random=1.0, model_first=True, model_symbol="X", stratum=-1),
                 EnvConfig(), RandomOpponent())
    first = (list(ep.messages), ep.state, None)
    ep.step("no move")  # invalid: a mistake, and the same board asked again below it
    positions = [first, (list(ep.messages), ep.state, None)]
    tok = AutoTokenizer.from_pretrained(tiny_checkpoint)
    teacher = minimax_player(tie_break="first", think=False, scoring="exploit")
    for flag, trained in (("true", 2), ("false", 1)):
        cfg = cfg_for(tmp_path, "train.sft.dagger_mistakes=value", f"train.sft.dagger_below_mistakes={flag}")
        out, corrections, wrong = examples(positions, tok, teacher, cfg)
        assert (len(out), corrections, wrong) == (trained, trained, 2)


RATES = ("tree_optimal_draw", "random_win", "random_loss", "random_invalid", "tree_optimal_invalid")
_rate = st.floats(0.0, 1.0, allow_nan=False)
_level = st.one_of(st.none(), _rate)


@settings(max_examples=200, deadline=None)
@given(rates=st.tuples(*[_rate] * len(RATES)), levels=st.tuples(*[_level] * 4), better=st.tuples(*[_rate] * 4))
def test_the_rounds_end_only_where_every_level_set_holds(rates: tuple, levels: tuple, better: tuple) -> None:
    """`train.sft.dagger_until`: a walk ends the rounds when it meets every level set (draws and
    wins at least, losses and invalid replies, against either opponent, at most) and none is
    missing; a walk that is as good or better on every rate meets whatever that one met."""
    from ttt_lab.config.sft_schema import DaggerUntil
    from ttt_lab.train.dagger_tree import levels_met

    counts = dict(zip(RATES, rates, strict=True))
    until = DaggerUntil(*levels)
    draw, win, loss, invalid = levels
    held = [draw is None or counts["tree_optimal_draw"] >= draw, win is None or counts["random_win"] >= win,
            loss is None or counts["random_loss"] <= loss,
            invalid is None or (counts["random_invalid"] <= invalid and counts["tree_optimal_invalid"] <= invalid)]
    met = levels_met(counts, until)
    assert bool(met) == (any(x is not None for x in levels) and all(held))
    up = {"tree_optimal_draw": max(counts["tree_optimal_draw"], better[0]),
          "random_win": max(counts["random_win"], better[1]), "random_loss": min(counts["random_loss"], better[2]),
          "random_invalid": min(counts["random_invalid"], better[3]),
          "tree_optimal_invalid": min(counts["tree_optimal_invalid"], better[3])}
    assert not met or levels_met(up, until)


def test_levels_need_the_whole_tree_walk_and_shares(tmp_path: Path) -> None:
    import pytest

    from ttt_lab.errors import InvalidSetting

    with pytest.raises(InvalidSetting, match=r"dagger_until\.max_random_loss.*dagger_tree=true"):
        cfg_for(tmp_path, "train.sft.loop=lean", "train.sft.dagger_until.max_random_loss=0.02")
    with pytest.raises(InvalidSetting, match=r"dagger_until\.min_optimal_draw.*between 0.0 and 1.0"):
        cfg_for(tmp_path, "train.sft.loop=lean", "train.sft.dagger_tree=true",
                "train.sft.dagger_until.min_optimal_draw=85")
    cfg = cfg_for(tmp_path, "train.sft.loop=lean", "train.sft.dagger_tree=true",
                  "train.sft.dagger_until.max_random_loss=0.02")
    assert cfg.train.sft.dagger_until.max_random_loss == 0.02
