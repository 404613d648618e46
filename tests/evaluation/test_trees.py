"""One tree walk per policy: the evaluation, the policy audit (its panel and its lines-not-held
count) and the exploiter's walk of one greedy model share one expanded tree, and each reports
what it reported from a tree of its own."""

import dataclasses
from pathlib import Path

import pytest
import torch

from ttt_lab.audit.exact_panel import member_distribution
from ttt_lab.audit.policy import agreement, audit_policy, fork_allowed, panel
from ttt_lab.config.load import load
from ttt_lab.env.exact import evaluate_tree, expand_tree
from ttt_lab.env.tree import play_tree
from ttt_lab.evaluation import trees
from ttt_lab.evaluation.exact import EXPLOITER, opponent_distribution
from ttt_lab.game.opponents import MinimaxOpponent
from ttt_lab.players.distributions import GreedyDistribution
from ttt_lab.players.hf import HFPlayer
from ttt_lab.train.checkpoints import load_model
from ttt_lab.train.evaluate import TRAINING_SUITE, evaluate_model
from ttt_lab.train.exploiter import greedy_tree

SMALL = ["env.think=off", "player.max_new_tokens=6", "env.max_model_turns=5", "tracking.enabled=false",
         "audit.policy.tree=true"]


@pytest.fixture
def expansions(monkeypatch: pytest.MonkeyPatch):
    """The policies whose trees were expanded through the shared cache, in order (empty cache first)."""
    trees.forget()
    seen: list = []
    real = trees.expand_tree

    def counting(policy, *args, **kwargs):
        seen.append(policy)
        return real(policy, *args, **kwargs)

    monkeypatch.setattr(trees, "expand_tree", counting)
    yield seen
    trees.forget()


@pytest.fixture
def trial(tiny_checkpoint: Path, tmp_path: Path):
    """A trial's end, as a study runs it: the model trained in memory, and the audit's player on
    the same weights loaded anew from the checkpoint."""
    torch.set_num_threads(1)
    cfg = load([*SMALL, f"home={tmp_path}", f"model.path={tiny_checkpoint}"]).cfg
    model, tok = load_model(str(tiny_checkpoint), cfg)
    audited = dataclasses.replace(cfg, player=dataclasses.replace(cfg.player, temperature=0.0))
    return cfg, model, tok, HFPlayer.from_config(audited)


def test_a_trial_expands_each_policys_tree_once(trial, expansions: list) -> None:
    cfg, model, tok, player = trial
    training = MinimaxOpponent("random", p_random=cfg.audit.policy.noise)
    final = evaluate_model(model, tok, cfg, 10)
    assert len(expansions) == 1 and [s.opponent for s in final][-1] == EXPLOITER
    audit = audit_policy(cfg, player, training)  # the panel and the lines-not-held count
    assert audit.data["mode"] == "exact" and audit.data["tree"]["games"] > 0
    greedy_tree(model, tok, cfg)  # an exploiter's settle of the same weights
    assert len(expansions) == 1

    with torch.no_grad():  # another policy: one weight changed
        model.get_input_embeddings().weight[0, 0] += 1.0
    evaluate_model(model, tok, cfg, 10)
    assert len(expansions) == 2


def test_the_shared_tree_gives_what_each_walk_gave_from_its_own(trial, expansions: list) -> None:
    cfg, model, tok, player = trial
    training = MinimaxOpponent("random", p_random=cfg.audit.policy.noise)
    final = evaluate_model(model, tok, cfg, 10)
    assert_as_from_own_trees(cfg, player, final, audit_policy(cfg, player, training), training)


def assert_as_from_own_trees(cfg, player, final: list, audit, training) -> None:
    """The evaluation's summaries equal those of its own tree; the audit's panel rates lie within
    the bounds of its own tree (cut below eval.min_prob) with nothing unexplored, and equal them
    where that tree cut nothing; its lines-not-held count is the one `play_tree` gives."""
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


def test_the_key_follows_the_weights_not_the_object(trial) -> None:
    cfg, model, tok, player = trial
    mine = GreedyDistribution(HFPlayer.from_model(model, tok, max_new_tokens=cfg.player.max_new_tokens))
    loaded = GreedyDistribution(player)
    assert trees.shared_key(mine, cfg) == trees.shared_key(loaded, cfg) is not None
    other = dataclasses.replace(cfg, env=dataclasses.replace(cfg.env, max_model_turns=4))
    assert trees.shared_key(mine, other) != trees.shared_key(mine, cfg)
    before = trees.weights_digest(model)
    with torch.no_grad():
        model.get_input_embeddings().weight[3, 1] *= 1.0 + 2**-20
    assert trees.weights_digest(model) != before
    sampling = HFPlayer.from_model(model, tok, temperature=1.0, max_new_tokens=cfg.player.max_new_tokens)
    assert trees.shared_key(GreedyDistribution(sampling), cfg) is None
