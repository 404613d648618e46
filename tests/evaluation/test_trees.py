"""One tree walk per policy: the evaluation, the policy audit (its panel and its lines-not-held
count) and the exploiter's walk of one greedy model share one expanded tree, and each reports
what it reported from a tree of its own."""

import dataclasses
from pathlib import Path

import pytest
import torch

from tests.policies import assert_as_from_own_trees, audited_player, training_opponent
from ttt_lab.audit.policy import audit_policy
from ttt_lab.config.load import load
from ttt_lab.evaluation import trees
from ttt_lab.evaluation.exact import EXPLOITER
from ttt_lab.players.distributions import GreedyDistribution
from ttt_lab.players.hf import HFPlayer
from ttt_lab.train.checkpoints import load_model
from ttt_lab.train.evaluate import evaluate_model
from ttt_lab.train.exploiter import greedy_tree

SMALL = ["env.think=off", "player.max_new_tokens=6", "env.max_model_turns=5", "tracking.enabled=false",
         "audit.policy.tree=true"]


@pytest.fixture
def trial(tiny_checkpoint: Path, tmp_path: Path):
    """A trial's end, as a study runs it: the model trained in memory, and the audit's player on
    the same weights loaded anew from the checkpoint."""
    torch.set_num_threads(1)
    cfg = load([*SMALL, f"home={tmp_path}", f"model.path={tiny_checkpoint}"]).cfg
    model, tok = load_model(str(tiny_checkpoint), cfg)
    return cfg, model, tok, audited_player(cfg)


def test_a_trial_expands_each_policys_tree_once(trial, expansions: list) -> None:
    cfg, model, tok, player = trial
    training = training_opponent(cfg)
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
    training = training_opponent(cfg)
    final = evaluate_model(model, tok, cfg, 10)
    assert_as_from_own_trees(cfg, player, final, audit_policy(cfg, player, training), training)


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
