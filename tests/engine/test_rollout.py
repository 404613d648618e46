from collections import defaultdict

import pytest
import torch

from ttt_lab.engine.rollout import Sampling, play_rollouts
from ttt_lab.env.dataset import make_dataset
from ttt_lab.env.settings import DatasetConfig, EnvConfig
from ttt_lab.game.board import play
from ttt_lab.game.opponents import MinimaxOpponent

pytestmark = [pytest.mark.xdist_group("rollout"), pytest.mark.numerics]


@pytest.fixture(scope="session")
def noisy_model(tiny_checkpoint):
    """The tiny model with large random weights, so greedy replies depend on the context."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_pretrained(tiny_checkpoint)
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0, 0.6)
    return model, AutoTokenizer.from_pretrained(tiny_checkpoint)


def test_cached_batched_decoding_matches_a_plain_forward_pass(noisy_model) -> None:
    model, tok = noisy_model
    examples = make_dataset(DatasetConfig(size=6, model_symbol="alternate"), 1)
    rollouts = play_rollouts(model, tok, examples, EnvConfig(max_model_turns=3), MinimaxOpponent(),
                             Sampling(temperature=0.0, max_new_tokens=5))
    checked = 0
    for r in rollouts:
        ids = torch.tensor([r.prompt_ids + r.completion_ids])
        with torch.no_grad():
            pred = model(input_ids=ids).logits[0].argmax(-1)
        start = len(r.prompt_ids)
        for i, m in enumerate(r.env_mask):
            if m:
                assert int(pred[start + i - 1]) == r.completion_ids[i]
                checked += 1
    assert checked > 20


def test_model_tokens_are_the_replies_and_the_rest_is_the_environment(noisy_model) -> None:
    model, tok = noisy_model
    examples = make_dataset(DatasetConfig(size=4), 2)
    for r in play_rollouts(model, tok, examples, EnvConfig(max_model_turns=3), MinimaxOpponent(),
                           Sampling(temperature=1.0, max_new_tokens=6), generator=torch.Generator().manual_seed(0)):
        segments, current, last = [], [], None
        for t, m in zip(r.completion_ids, r.env_mask, strict=True):
            if m != last and current:
                segments.append((last, current))
                current = []
            current.append(t)
            last = m
        segments.append((last, current))
        replies = [tok.decode(ids, skip_special_tokens=True) for m, ids in segments if m == 1]
        assistant = [m["content"] for m in r.record.messages if m["role"] == "assistant"]
        assert replies == assistant
        env_text = [tok.decode(ids) for m, ids in segments if m == 0]
        users = [m["content"] for m in r.record.messages if m["role"] == "user"][1:]
        assert len(env_text) == len(users)
        for text, user in zip(env_text, users, strict=True):
            assert user in text and "<|im_start|>assistant" in text


def test_rollouts_of_one_example_meet_the_same_opponent(noisy_model) -> None:
    model, tok = noisy_model
    ex = make_dataset(DatasetConfig(size=1, p_min=0.5, p_max=0.5, num_strata=1, first_player="opponent"), 3)[0]
    rollouts = play_rollouts(model, tok, [ex] * 12, EnvConfig(max_model_turns=6), MinimaxOpponent(p_random=0.5),
                             Sampling(temperature=1.5, max_new_tokens=6), generator=torch.Generator().manual_seed(1))
    replies = defaultdict(set)
    for r in rollouts:
        board = "........."
        for by, cell in r.record.moves:
            if by == "opponent":
                replies[board].add(cell)
            board = play(board, cell)
    assert replies
    assert all(len(v) == 1 for v in replies.values())


@pytest.mark.parametrize(("compact_at", "few_rows"), [(0.0, 0.0), (1.0, 0.0), (0.0, 0.5), (1.0, 1.0)])
def test_dropping_finished_games_from_the_batch_changes_no_probability(sft_run, monkeypatch, compact_at,
                                                                       few_rows) -> None:
    """Whether finished games leave the batch at once (compact_at 1.0) or never (0.0), and
    whether a decoding step computes only the games still writing (few_rows 1.0) or every row
    (0.0), every token the model wrote has the log-probability a plain forward pass over the
    whole game gives it."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from ttt_lab.engine import kv_backend, rollout
    from ttt_lab.engine.kv_cache import GrowingCache

    model, tok = AutoModelForCausalLM.from_pretrained(sft_run[0]), AutoTokenizer.from_pretrained(sft_run[0])
    examples = make_dataset(DatasetConfig(size=16, model_symbol="alternate", p_min=0.0, p_max=1.0), 4)
    monkeypatch.setattr(rollout, "COMPACT_AT", compact_at)
    monkeypatch.setattr(kv_backend, "FEW_ROWS", few_rows)
    subsets = []
    only = GrowingCache.only
    monkeypatch.setattr(GrowingCache, "only", lambda self, rows: subsets.append(len(rows)) or only(self, rows))
    rollouts = play_rollouts(model, tok, examples, EnvConfig(max_model_turns=5), MinimaxOpponent(p_random=0.5),
                             Sampling(temperature=1.3, max_new_tokens=6), generator=torch.Generator().manual_seed(5))
    turns = [sum(1 for m in r.record.messages if m["role"] == "assistant") for r in rollouts]
    assert max(turns) >= 3 and len(set(turns)) > 2, "games of several turns and of different lengths"
    for r in rollouts:
        with torch.no_grad():
            logits = model(input_ids=torch.tensor([r.prompt_ids + r.completion_ids])).logits[0]
        logp = torch.log_softmax(logits / 1.3, dim=-1)
        start = len(r.prompt_ids)
        wrote = [i for i, m in enumerate(r.env_mask) if m]
        expected = torch.stack([logp[start + i - 1, r.completion_ids[i]] for i in wrote])
        torch.testing.assert_close(torch.tensor([r.logprobs[i] for i in wrote]), expected, atol=1e-4, rtol=1e-4)
        assert all(r.logprobs[i] == 0.0 for i, m in enumerate(r.env_mask) if not m)
    assert bool(subsets) == (few_rows > 0), "the steps of the few games still writing computed them alone"


def test_a_keyed_game_samples_the_same_whatever_shares_its_batch(noisy_model) -> None:
    """With a sampling seed each game draws from its own stream: the same game (id) gives the
    same replies alone, in another batch, in another order — what makes 1 and N training
    processes play the same games — and other seeds or ids give other games."""
    model, tok = noisy_model
    examples = make_dataset(DatasetConfig(size=6), 3)
    env, opp = EnvConfig(max_model_turns=4), MinimaxOpponent(p_random=0.5)
    sampling = Sampling(temperature=1.0, max_new_tokens=6)

    def games(idx: list[int], seed: int = 7) -> dict[int, list[int]]:
        out = play_rollouts(model, tok, [examples[i] for i in idx], env, opp, sampling, game_ids=idx,
                            sampling_seed=seed)
        return {i: r.completion_ids for i, r in zip(idx, out, strict=True)}

    whole = games([0, 1, 2, 3, 4, 5])
    assert games([4, 1]) == {4: whole[4], 1: whole[1]}
    assert games([5, 3, 0]) == {5: whole[5], 3: whole[3], 0: whole[0]}
    other = games([0, 1, 2, 3, 4, 5], seed=8)
    assert sum(other[i] != whole[i] for i in whole) >= 3
    copies = play_rollouts(model, tok, [examples[0]] * 6, env, MinimaxOpponent(), sampling, game_ids=range(6),
                           sampling_seed=7, opponent_seeding="per_example")
    assert len({tuple(r.completion_ids) for r in copies}) >= 3  # copies of one example differ: not greedy
