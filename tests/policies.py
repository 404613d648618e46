"""Policies the tree-walk and exploiter tests build (tests/evaluation/test_trees.py,
tests/train/test_exploiter.py): weights that give one fixed reply, the greedy player a trial's
policy audit plays and the opponent it trained against, an exploiting phase's refresher, the
count of trees expanded through the shared cache (the `expansions` fixture), and the check that
walks of the shared tree report what walks of their own trees report."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from ttt_lab.evaluation import trees


def reply_always(model, tok, reply: str) -> None:
    """Weights whose greedy reply is `reply` (one token; "" for none) to every conversation, on
    every kernel path: with each layer's output projections zeroed a position sees its own token
    alone, and the embeddings (tied to the head) put the reply's token far above every other after
    any token but itself, and the end of turn far above every other after it."""
    with torch.no_grad():
        for layer in model.model.layers:
            layer.self_attn.o_proj.weight.zero_()
            layer.mlp.down_proj.weight.zero_()
        embed, norm = model.get_input_embeddings().weight, model.model.norm.weight
        norm.zero_()
        norm[:2] = torch.tensor([1.0, -1.0])  # scores u.v = u0 v0 - u1 v1
        embed.zero_()
        embed[:, 0] = 1.0  # every token: (1, 0), scoring 1 after any other
        if reply:
            embed[tok.convert_tokens_to_ids(reply), :2] = torch.tensor([10.0, 10.0])  # 10 after (1, 0); 0 after itself
        embed[tok.eos_token_id, :2] = torch.tensor([2.0, -2.0])  # 2 after (1, 0); 40 after the reply
        head = model.get_output_embeddings().weight
        if head is not embed:
            head.copy_(embed)


def audited_player(cfg):
    """The player a trial's policy audit plays: the model at cfg.model.path loaded anew, greedy."""
    from ttt_lab.players.hf import HFPlayer

    return HFPlayer.from_config(dataclasses.replace(cfg, player=dataclasses.replace(cfg.player, temperature=0.0)))


def training_opponent(cfg):
    """The opponent the audit's panel is built around: random moves at the audit's noise."""
    from ttt_lab.game.opponents import MinimaxOpponent

    return MinimaxOpponent("random", p_random=cfg.audit.policy.noise)


def phase_refresher(cfg):
    """The exploiting phase's refresher of cfg's first phase (opponent=exploiter)."""
    from ttt_lab.config.build import build_opponent
    from ttt_lab.train.exploiter import phase_opponent

    made = phase_opponent(build_opponent(cfg.opponent), cfg, cfg.train.phases[0])
    assert made is not None
    return made


def count_expansions(monkeypatch: pytest.MonkeyPatch) -> list:
    """From now on, the policies whose trees are expanded through the shared cache
    (`ttt_lab.evaluation.trees`), in order."""
    seen: list = []
    real = trees.expand_tree

    def counting(policy, *args, **kwargs):
        seen.append(policy)
        return real(policy, *args, **kwargs)

    monkeypatch.setattr(trees, "expand_tree", counting)
    return seen


def assert_as_from_own_trees(cfg, player, final: list, audit, training) -> None:
    """The evaluation's summaries equal those of its own tree; the audit's panel rates lie within
    the bounds of its own tree (cut below eval.min_prob) with nothing unexplored, and equal them
    where that tree cut nothing; its lines-not-held count is the one `play_tree` gives."""
    from ttt_lab.audit.exact_panel import member_distribution
    from ttt_lab.audit.policy import agreement, fork_allowed, panel
    from ttt_lab.env.exact import evaluate_tree, expand_tree
    from ttt_lab.env.tree import play_tree
    from ttt_lab.evaluation.exact import opponent_distribution
    from ttt_lab.players.distributions import GreedyDistribution
    from ttt_lab.train.evaluate import TRAINING_SUITE

    policy = GreedyDistribution(player)
    own = expand_tree(policy, cfg.env, trees.starts(cfg), min_prob=cfg.eval.min_prob)
    dists = [opponent_distribution(e) for e in TRAINING_SUITE] + [None]
    assert [s.totals for s in final] == [evaluate_tree(own, d) for d in dists]

    members = panel(training, cfg.opponent.scoring, 1, cfg.audit.policy.noise)
    member_dists = [member_distribution(m.opponent) for m in members]
    own_panel = expand_tree(policy, cfg.env, trees.starts(cfg), min_prob=cfg.eval.min_prob,
                            opponent_bound=trees.largest_of(member_dists))
    for got, dist in zip(audit.data["members"], member_dists, strict=True):
        was = evaluate_tree(own_panel, dist)
        assert got["unexplored"] == 0.0
        for name, rate in (("win", was.win), ("draw", was.draw), ("loss", was.loss)):
            assert rate - 1e-12 <= got[f"{name}_rate"] <= rate + was.unexplored + 1e-12, (got["name"], name)
            if was.unexplored == 0:
                assert got[f"{name}_rate"] == pytest.approx(rate, abs=1e-12)

    games = play_tree(player, cfg.env, model_symbol="X")
    tree = audit.data["tree"]
    assert tree["games"] == len(games) and tree["not_held"] == sum(g.outcome not in ("win", "draw") for g in games)
    assert tree["invalid_lines"] == sum(g.invalid_moves > 0 for g in games)
    assert tree["forks_allowed"] == sum(fork_allowed(g) for g in games)
    assert tree["optimal_agreement"] == agreement(games)[0]
