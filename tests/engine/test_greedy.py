"""`engine.greedy.GreedyReplies`: a tree walk's greedy replies through the KV cache of the level
before are the replies `generate` writes re-reading every conversation whole."""

from pathlib import Path

import pytest

from tests.conftest import make_noisy
from ttt_lab.env.exact import expand_tree
from ttt_lab.env.settings import EnvConfig
from ttt_lab.players.distributions import GreedyDistribution
from ttt_lab.players.hf import HFPlayer

pytestmark = [pytest.mark.numerics]

STARTS = [(True, "X", 0.5), (False, "O", 0.5)]


@pytest.fixture(scope="module")
def noisy_checkpoint(tiny_checkpoint: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    import shutil

    folder = tmp_path_factory.mktemp("noisy-greedy") / "tiny"
    shutil.copytree(tiny_checkpoint, folder)
    return make_noisy(folder, seed=3)


def _walk(player: HFPlayer, env: EnvConfig) -> tuple[dict, int]:
    replies: dict = {}
    respond = player.respond

    def recording(turns):
        got = respond(turns)
        replies.update({tuple(m["content"] for m in t.messages): r for t, r in zip(turns, got, strict=True)})
        return got

    player.respond = recording  # type: ignore[method-assign]
    tree = expand_tree(GreedyDistribution(player), env, STARTS)
    return replies, tree.model_turns


@pytest.mark.parametrize("batch_size", [5, 64])
def test_a_tree_walk_through_the_kv_cache_asks_what_generate_answers(noisy_checkpoint: Path, batch_size: int,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Every conversation of the walk gets the reply generate gives it, in batches of any size;
    past the first level, most conversations read only their new tokens (a reply whose text
    tokenizes otherwise than it was written is read whole: the noisy model writes a few)."""
    from ttt_lab.engine import greedy

    env = EnvConfig(think="off", max_model_turns=4)
    cached = HFPlayer(str(noisy_checkpoint), max_new_tokens=6, batch_size=batch_size)
    whole = HFPlayer(str(noisy_checkpoint), max_new_tokens=6, batch_size=batch_size, kv_cache=False)
    read_whole: list[int] = []
    grown = greedy._grown

    def counting(model, parent, rows, extra):
        read_whole.append(len(rows))
        return grown(model, parent, rows, extra)

    monkeypatch.setattr(greedy, "_grown", counting)
    got, asked = _walk(cached, env)
    want, asked_whole = _walk(whole, env)
    assert asked == asked_whole > 20 and got == want
    first_level = sum(1 for k in got if len(k) <= 2)
    assert (asked - first_level) / 2 < sum(read_whole) <= asked - first_level


def test_changed_weights_drop_the_kept_caches(noisy_checkpoint: Path) -> None:
    """A weight written in place (an optimizer step) makes the kept caches stale: not reused."""
    import torch

    player = HFPlayer(str(noisy_checkpoint), max_new_tokens=6)
    env = EnvConfig(think="off", max_model_turns=2)
    _walk(player, env)
    assert player._walker._last
    with torch.no_grad():
        next(player.model.parameters()).mul_(1.0)
    player._walker([[{"role": "user", "content": "x"}]])
    assert len(player._walker._last) == 1 and not any(len(k) > 1 for c in player._walker._last for k in c.rows)


@pytest.mark.parametrize("budget", [0, 40_000])
def test_kept_caches_stay_within_their_memory_budget(noisy_checkpoint: Path, budget: int,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """A large model's every-reply tree would keep tens of GB of caches: past the budget a chunk is
    dropped and its conversations are read whole next time, with the same replies."""
    from ttt_lab.engine import greedy

    env = EnvConfig(think="off", max_model_turns=4)
    monkeypatch.setattr(greedy, "default_keep_bytes", lambda: budget)
    capped = HFPlayer(str(noisy_checkpoint), max_new_tokens=6, batch_size=5)
    whole = HFPlayer(str(noisy_checkpoint), max_new_tokens=6, batch_size=5, kv_cache=False)
    kept: list[int] = []
    answer = greedy.GreedyReplies.__call__

    def measured(self, conversations):
        got = answer(self, conversations)
        kept.append(sum(greedy._cache_bytes(c.batch) for c in self._last))
        return got

    monkeypatch.setattr(greedy.GreedyReplies, "__call__", measured)
    got, asked = _walk(capped, env)
    want, _ = _walk(whole, env)
    assert got == want and asked > 20
    assert max(kept) <= budget
    assert (max(kept) > 0) == (budget > 0)


def test_the_last_levels_caches_are_let_go_once_their_children_are_answered(noisy_checkpoint: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """A level's kept caches and the next level's are not all held at once: when a parent chunk's
    conversations have all been extended, its cache is freed before the next parent's are read."""
    import weakref

    from ttt_lab.engine import greedy

    env = EnvConfig(think="off", max_model_turns=4)
    player = HFPlayer(str(noisy_checkpoint), max_new_tokens=6, batch_size=5)
    grown, seen, alive = greedy._grown, [], []

    def watching(model, parent, rows, extra):
        if not seen or seen[-1]() is not parent:
            alive.append(sum(ref() is not None for ref in seen))  # parents before this one, still held
            seen.append(weakref.ref(parent))
        return grown(model, parent, rows, extra)

    answer = greedy.GreedyReplies.__call__

    def per_call(self, conversations):
        seen.clear()
        return answer(self, conversations)

    monkeypatch.setattr(greedy, "_grown", watching)
    monkeypatch.setattr(greedy.GreedyReplies, "__call__", per_call)
    _walk(player, env)
    assert len(alive) > 5 and max(alive) == 0


def test_a_forward_pass_holds_no_more_conversations_than_its_cache_budget(noisy_checkpoint: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """`batch_bytes` caps the rows of a pass below `batch_size` (a large model's cache of 256 long
    conversations is gigabytes); the replies stay those of reading every conversation whole."""
    from ttt_lab.engine import greedy

    env = EnvConfig(think="off", max_model_turns=4)
    whole = HFPlayer(str(noisy_checkpoint), max_new_tokens=6, batch_size=64, kv_cache=False)
    want, _ = _walk(whole, env)
    c = whole.model.config
    per_token = 2 * c.num_hidden_layers * c.num_key_value_heads * (c.hidden_size // c.num_attention_heads) * 4
    batch, made = greedy._Batch.__init__, []

    def counting(self, model, n, max_len, device):
        made.append((n, max_len))
        batch(self, model, n, max_len, device)

    monkeypatch.setattr(greedy._Batch, "__init__", counting)
    for tokens in (100_000, 2_000):  # a budget of many rows, then of a few
        monkeypatch.setattr(greedy, "default_batch_bytes", lambda tokens=tokens: tokens * per_token)
        made.clear()
        got, _ = _walk(HFPlayer(str(noisy_checkpoint), max_new_tokens=6, batch_size=64), env)
        assert got == want and len(made) > 5
        assert all(n * length <= tokens for n, length in made if n > 1)
        assert max(n for n, _ in made) > (3 if tokens > 10_000 else 0)
