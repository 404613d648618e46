"""`HFPlayer.play_games`: a local model's evaluation games through the training's KV-cache engine
play what the turn-by-turn `generate` path plays, reproducibly, whatever the batching."""

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import make_noisy
from ttt_lab.env.dataset import make_dataset
from ttt_lab.env.driver import play_games
from ttt_lab.env.settings import DatasetConfig, EnvConfig
from ttt_lab.game.opponents import MinimaxOpponent
from ttt_lab.players.hf import HFPlayer

pytestmark = [pytest.mark.numerics]


@pytest.fixture(scope="module")
def noisy_checkpoint(tiny_checkpoint: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny model with large random weights: its greedy replies depend on the whole context."""
    import shutil

    folder = tmp_path_factory.mktemp("noisy") / "tiny"
    shutil.copytree(tiny_checkpoint, folder)
    return make_noisy(folder)


@pytest.fixture(scope="module")
def noisy(noisy_checkpoint: Path) -> HFPlayer:
    return HFPlayer(str(noisy_checkpoint), max_new_tokens=8, batch_size=16)


def _examples(seed: int, n: int = 8):
    return make_dataset(DatasetConfig(size=n, model_symbol="alternate", p_min=0.3, p_max=0.3, num_strata=1), seed)


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**16), think=st.sampled_from(["off", "optional"]))
def test_greedy_engine_games_are_the_turn_by_turn_games_wherever_the_model_sees_the_same_tokens(
        noisy: HFPlayer, seed: int, think: str) -> None:
    """Greedy: every reply the engine writes from the tokens the turn-by-turn path would feed the
    model (the conversation rendered and tokenized again) is the reply that path writes, and a game
    whose every turn is so is the same game. The two differ only where the model's own reply
    does not tokenize back to the tokens it wrote (the engine keeps those tokens; `generate`
    re-reads the text): from there on the paths may part, as free text meets the tokenizer."""
    from ttt_lab.engine.rollout import Sampling, play_rollouts

    env, opponent, examples = EnvConfig(think=think, max_model_turns=4), MinimaxOpponent(p_random=0.3), _examples(seed)
    old = play_games(noisy, examples, env, opponent)
    new = noisy.play_games(examples, env, opponent)
    rollouts = play_rollouts(noisy.model, noisy.tokenizer, examples, env, opponent,
                             Sampling(0.0, noisy.max_new_tokens))
    assert [r.record.messages for r in rollouts] == [g.messages for g in new]  # the engine, as the player calls it
    tok, checked = noisy.tokenizer, 0
    for o, r in zip(old, rollouts, strict=True):
        messages, ids = r.record.messages, r.prompt_ids + r.completion_ids
        mask = [0] * len(r.prompt_ids) + r.env_mask
        starts = [i for i in range(1, len(mask)) if mask[i] and not mask[i - 1]]
        turns = [i for i, m in enumerate(messages) if m["role"] == "assistant"]
        for start, at in zip(starts, turns, strict=True):
            text = tok.apply_chat_template(messages[:at], tokenize=False, add_generation_prompt=True)
            if tok(text, add_special_tokens=False)["input_ids"] != ids[:start]:
                break
            assert o.messages[at] == messages[at]
            checked += 1
        else:
            assert o.messages == messages and o.outcome == r.record.outcome
    assert checked >= len(examples)  # every first reply at least


def test_sampled_engine_games_repeat_for_a_seed_whatever_the_batching(noisy_checkpoint: Path) -> None:
    """The same seed plays the same games in batches of 3 or of 16 (each game samples from its
    own stream); another seed plays others; the process's global RNG is left as it was."""
    import torch

    env, opponent, examples = EnvConfig(max_model_turns=3), MinimaxOpponent(p_random=0.5), _examples(1, 10)

    def games(seed: int, batch_size: int) -> list[list[dict[str, str]]]:
        player = HFPlayer(str(noisy_checkpoint), max_new_tokens=6, temperature=1.0, batch_size=batch_size, seed=seed)
        return [r.messages for r in player.play_games(examples, env, opponent)]

    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    first = games(3, 16)
    assert torch.equal(torch.rand(3), expected)
    assert first == games(3, 16) == games(3, 3)
    assert first != games(4, 16)
    greedy = HFPlayer(str(noisy_checkpoint), max_new_tokens=6, seed=3).play_games(examples, env, opponent)
    assert first != [r.messages for r in greedy]


def test_a_suite_plays_a_local_models_games_through_the_engine(noisy_checkpoint: Path, tmp_path: Path) -> None:
    """`ttt-lab eval player=hf eval.mode=sampled` (`play_suite`): no `generate`, one batch of games
    per opponent, the summaries' rates from those games, progress counted per batch."""
    from ttt_lab.config.load import load
    from ttt_lab.evaluation.suite import play_suite

    cfg = load(["player=hf", f"model.path={noisy_checkpoint}", "eval.suite=quick", "eval.mode=sampled",
                "eval.games=6", "player.max_new_tokens=6", "env.max_model_turns=3", "train.precision=fp32",
                f"home={tmp_path}", "tracking.enabled=false"]).cfg
    player = HFPlayer.from_config(cfg)

    def refuse(*a, **k):
        raise AssertionError("the engine plays the suite, not generate")

    player.model.generate = refuse
    finished: list[tuple[str, int]] = []
    results = play_suite(cfg, player, lambda name, n: finished.append((name, n)))
    assert finished == [("random", 6), ("optimal", 6)]
    for r in results:
        assert r.summary.games == len(r.records) == 6
        assert all(g.outcome is not None and 1 <= g.model_turns <= 3 for g in r.records)
    again = play_suite(cfg, HFPlayer.from_config(cfg))
    assert [[g.messages for g in r.records] for r in results] == [[g.messages for g in r.records] for r in again]


def test_without_the_kv_cache_a_suite_asks_generate_turn_by_turn(noisy_checkpoint: Path, tmp_path: Path) -> None:
    """player.kv_cache=false: the turn-by-turn games of `env.driver.play_games`, through `generate`."""
    from ttt_lab.config.build import suite_opponent
    from ttt_lab.config.load import load
    from ttt_lab.evaluation.suite import play_suite, suite_examples

    cfg = load(["player=hf", f"model.path={noisy_checkpoint}", "eval.suite=quick", "eval.mode=sampled",
                "eval.games=4", "player.max_new_tokens=6", "env.max_model_turns=3", "train.precision=fp32",
                "player.kv_cache=false", f"home={tmp_path}", "tracking.enabled=false"]).cfg
    player = HFPlayer.from_config(cfg)
    calls, generate = [], player.model.generate
    player.model.generate = lambda *a, **k: calls.append(1) or generate(*a, **k)
    results = play_suite(cfg, player)
    assert calls
    for i, r in enumerate(results):
        turn_by_turn = play_games(HFPlayer.from_config(cfg), suite_examples(cfg, i, r.entry), cfg.env,
                                  suite_opponent(r.entry))
        assert [g.messages for g in r.records] == [g.messages for g in turn_by_turn]
