"""The tree a policy is walked on, expanded once per policy and settings.

The evaluation, the policy audit, the exploiter's refreshes and settle, and the audit's count of
lines not held all walk a policy's game tree. A greedy model's every-reply tree holds every line
any opponent can make it play, never cut (each path has probability 1), so one expansion serves
them all: it is kept, keyed by a digest of the model's weights and tokenizer and by the settings
its replies depend on (the environment, the starting positions, the reply length), and handed
back to every later walk of the same policy, even one that loaded the same weights anew. Batch
size, attention kernel and bf16 autocast stay out of the key: they change rounding, not the policy.
"""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict
from collections.abc import Callable, Sequence

from ttt_lab.config.build import suite_opponent
from ttt_lab.config.schema import Config, SuiteEntry
from ttt_lab.env.exact import OpponentDistribution, ReplyDistribution, Tree, expand_tree

KEEP = 4
"""Trees kept (the least recently used goes first): a trial walks its warm-up's policy and its final one."""
_trees: OrderedDict[tuple, Tree] = OrderedDict()


def starts(cfg: Config) -> list[tuple[bool, str, float]]:
    """(model moves first, symbol shown, weight) as the evaluation's examples draw them: who starts
    alternates, the symbol is the dataset's (alternate and random: each half the games)."""
    symbols = [cfg.dataset.model_symbol] if cfg.dataset.model_symbol in ("X", "O") else ["X", "O"]
    return [(first, s, 0.5 / len(symbols)) for first in (True, False) for s in symbols]


def opponent_distribution(entry: SuiteEntry) -> OpponentDistribution:
    opponent = suite_opponent(entry)
    return opponent.distribution  # type: ignore[attr-defined]


def largest_of(dists: Sequence[OpponentDistribution]) -> OpponentDistribution:
    def largest(state: int) -> dict[int, float]:
        out: dict[int, float] = {}
        for d in dists:
            for c, q in d(state).items():
                out[c] = max(out.get(c, 0.0), q)
        return out

    return largest


def suite_bound(suite: Sequence[SuiteEntry]) -> OpponentDistribution:
    """The largest probability any suite opponent gives each reply: the tree the suite needs."""
    return largest_of([opponent_distribution(e) for e in suite])


def weights_digest(model) -> str:
    """A digest of every tensor of `model`'s state (names, dtypes, shapes, bytes): equal for the
    same weights however they were loaded, different after any change to one of them."""
    import torch

    h = hashlib.blake2b(digest_size=16)
    h.update(type(model).__name__.encode())
    for name, t in model.state_dict().items():
        h.update(f"{name}:{t.dtype}:{tuple(t.shape)}".encode())
        h.update(t.detach().to("cpu").contiguous().reshape(-1).view(torch.uint8).numpy().tobytes())
    return h.hexdigest()


def tokenizer_digest(tokenizer) -> str:
    """A digest of what turns a conversation into tokens and back: vocabulary, rules, template
    (not the padding and truncation a call last set: they change with every batch)."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is not None:
        rules = {k: v for k, v in json.loads(backend.to_str()).items() if k not in ("padding", "truncation")}
        text = json.dumps(rules, sort_keys=True)
    else:
        text = repr(sorted(tokenizer.get_vocab().items()))
    extra = f"{tokenizer.chat_template}|{tokenizer.pad_token_id}|{tokenizer.eos_token_id}"
    return hashlib.blake2b((text + extra).encode(), digest_size=16).hexdigest()


def policy_key(policy: ReplyDistribution) -> tuple | None:
    """What a greedy model's replies depend on; None for any other policy (a sampling one's tree
    depends on the opponents it is cut for, a scripted one's costs little to expand)."""
    from ttt_lab.players.distributions import GreedyDistribution
    from ttt_lab.players.hf import HFPlayer

    player = getattr(policy, "player", None)
    if not isinstance(policy, GreedyDistribution) or not isinstance(player, HFPlayer) or player.temperature > 0:
        return None
    device = next(iter(player.model.parameters())).device.type
    return (weights_digest(player.model), tokenizer_digest(player.tokenizer), player.max_new_tokens, device)


def shared_key(policy: ReplyDistribution, cfg: Config) -> tuple | None:
    """The cache key of `policy`'s every-reply tree under `cfg`, or None when it is not shared."""
    key = policy_key(policy)
    return None if key is None else (*key, repr(cfg.env), tuple(starts(cfg)))


def policy_tree(policy: ReplyDistribution, cfg: Config, bound: OpponentDistribution | None = None, *,
                on_level: Callable[[int], None] | None = None) -> Tree:
    """The policy's tree from the evaluation's starts, opponent replies up to `bound` (None: every
    reply, the best response's tree), paths cut below `eval.min_prob`. A greedy model gets its
    every-reply tree whatever the bound (a superset: any opponent's walk reads the same lines,
    none cut), expanded on its first walk and shared by the rest."""
    key = shared_key(policy, cfg)
    if key is None:
        return expand_tree(policy, cfg.env, starts(cfg), min_prob=cfg.eval.min_prob, opponent_bound=bound,
                           on_level=on_level)
    tree = _trees.get(key)
    if tree is None:
        tree = expand_tree(policy, cfg.env, starts(cfg), opponent_bound=None, on_level=on_level)
    elif on_level is not None:
        on_level(tree.model_turns)
    _keep(key, tree)
    return tree


def walked_by(policy: ReplyDistribution, walker: Callable[[], ReplyDistribution], cfg: Config) -> None:
    """Keep `policy`'s every-reply tree, expanded by `walker()` (the same policy computed more
    cheaply, e.g. through a bf16 copy of its weights) unless one is kept already."""
    key = shared_key(policy, cfg)
    if key is not None and key not in _trees:
        _keep(key, expand_tree(walker(), cfg.env, starts(cfg)))


def remember(policy: ReplyDistribution, cfg: Config, tree: Tree) -> None:
    """Keep `tree`, the every-reply tree of `policy` from the evaluation's starts expanded by a
    caller that watched the walk (DAgger's), for the later walks of the same policy."""
    if (key := shared_key(policy, cfg)) is not None:
        _keep(key, tree)


def _keep(key: tuple, tree: Tree) -> None:
    _trees[key] = tree
    _trees.move_to_end(key)
    while len(_trees) > KEEP:
        _trees.popitem(last=False)


def forget() -> None:
    """Drop every kept tree."""
    _trees.clear()


__all__ = ["forget", "largest_of", "opponent_distribution", "policy_key", "policy_tree", "remember", "shared_key",
           "starts", "suite_bound", "weights_digest"]
