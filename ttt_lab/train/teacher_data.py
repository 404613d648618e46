"""The warm-up's teacher data: the scripted teacher, its games over the environment's opponent range
or the evaluation's strengths, its trees, and its lines against every branch of the optimal
opponent; and which games are kept to learn from."""

from __future__ import annotations

import dataclasses

from ttt_lab.config.schema import Config, warm_up_seed
from ttt_lab.env.dataset import Example, make_dataset
from ttt_lab.env.driver import play_games
from ttt_lab.env.record import GameRecord
from ttt_lab.env.rubric import DRAW, WIN
from ttt_lab.env.settings import DatasetConfig
from ttt_lab.env.tree import play_tree, tree_symbol
from ttt_lab.game.opponents import MinimaxOpponent
from ttt_lab.game.seeding import derive_seed
from ttt_lab.players.scripted import minimax_player
from ttt_lab.train.teacher import optimal_lines

SFT_SALT = 0x5F7
TREE_SALT = 0x7EE0
LINES_SALT = 0x1135


def teacher_dataset(cfg: Config) -> DatasetConfig:
    """The teacher's games: `sft.num_games` over the dataset's opponent range, always stratified
    (the RL phases' `dataset.sampling` does not reach the warm-up)."""
    s = cfg.train.sft
    return DatasetConfig(size=s.num_games, p_min=cfg.dataset.p_min, p_max=cfg.dataset.p_max,
                         num_strata=cfg.dataset.num_strata, examples_per_batch=min(s.num_games, 256),
                         first_player="alternate", model_symbol=cfg.dataset.model_symbol)


def teacher(cfg: Config):
    """The warm-up's scripted teacher (`train.sft.teacher_*`)."""
    s = cfg.train.sft
    return minimax_player(tie_break=s.teacher_tie_break, p_random=s.teacher_p_random, think=cfg.env.think != "off",
                          scoring=s.teacher_scoring)


def strength_examples(cfg: Config) -> list[Example]:
    """`sft.num_games` examples spread evenly over `sft.teacher_strengths` (each strength's games
    alternate who moves first), or over the dataset's range when no strengths are named."""
    s = cfg.train.sft
    seed = derive_seed(warm_up_seed(cfg), SFT_SALT)
    if not s.teacher_strengths:
        return make_dataset(teacher_dataset(cfg), seed)
    out: list[Example] = []
    k = len(s.teacher_strengths)
    for i, p in enumerate(s.teacher_strengths):
        n = s.num_games // k + (i < s.num_games % k)
        if n:
            ds = DatasetConfig(size=n, p_min=p, p_max=p, num_strata=1, examples_per_batch=n,
                               first_player="alternate", model_symbol=cfg.dataset.model_symbol)
            out += [dataclasses.replace(e, index=len(out) + j) for j, e in enumerate(make_dataset(ds, seed + i))]
    return out


def lines_of(cfg: Config) -> list[GameRecord]:
    """The teacher's games against every tie-break branch of the optimal opponent, each once
    (the data's, the coverage's and the diagnostic's: one seed for a noisy teacher's moves)."""
    return optimal_lines(teacher(cfg), cfg.env, model_symbol=tree_symbol(cfg.dataset.model_symbol, 0),
                         seed=derive_seed(warm_up_seed(cfg), LINES_SALT))


def teacher_lines(cfg: Config) -> list[GameRecord]:
    """One copy of `lines_of`, each game where the model moves first `sft.first_weight` times."""
    s = cfg.train.sft
    return [r for r in lines_of(cfg) for _ in range(s.first_weight if r.example.model_first else 1)]


def teacher_games(cfg: Config) -> list[GameRecord]:
    """`sft.num_games` games of a minimax teacher against the environment's opponent range (or
    `sft.teacher_strengths`), then `sft.teacher_trees` of its trees (every opponent reply, both
    sides), then `sft.optimal_lines` copies of its lines against the optimal opponent."""
    s = cfg.train.sft
    player = teacher(cfg)
    records: list[GameRecord] = []
    if s.num_games:
        records = play_games(player, strength_examples(cfg), cfg.env, MinimaxOpponent(tie_break="random"))
    for k in range(s.teacher_trees):
        records += play_tree(player, cfg.env, model_symbol=tree_symbol(cfg.dataset.model_symbol, k),
                             seed=derive_seed(warm_up_seed(cfg), TREE_SALT + k))
    if s.optimal_lines:
        records += teacher_lines(cfg) * s.optimal_lines
    return records


def keep(records: list[GameRecord], cfg: Config) -> list[GameRecord]:
    s = cfg.train.sft
    out = [r for r in records if not s.filter_losses or r.outcome in (WIN, DRAW)]
    if s.filter_format_errors:
        out = [r for r in out if r.messages_in_format == r.model_turns and r.invalid_moves == 0]
    return out
