"""Playing a player against every opponent of an evaluation suite."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ttt_lab.config.build import suite_opponent
from ttt_lab.config.schema import Config, SuiteEntry
from ttt_lab.env.dataset import Example, make_dataset
from ttt_lab.env.driver import Player, play_games
from ttt_lab.env.record import GameRecord
from ttt_lab.env.settings import DatasetConfig, EnvConfig
from ttt_lab.evaluation.summary import Summary, summarise
from ttt_lab.game.opponents import Opponent
from ttt_lab.game.seeding import derive_seed

EVAL_SALT = 0xE7A1


@dataclass
class SuiteResult:
    entry: SuiteEntry
    records: list[GameRecord]
    summary: Summary


def suite_examples(cfg: Config, index: int, entry: SuiteEntry) -> list[Example]:
    """`eval.games` examples at the entry's `p_random`, alternating who moves first."""
    ds = DatasetConfig(size=cfg.eval.games, p_min=entry.p_random, p_max=entry.p_random, num_strata=1,
                       sampling="iid", examples_per_batch=cfg.eval.games, first_player="alternate",
                       model_symbol=cfg.dataset.model_symbol)
    return make_dataset(ds, derive_seed(cfg.seed ^ EVAL_SALT, index))


def entries(cfg: Config) -> list[SuiteEntry]:
    return list(cfg.eval.suites[cfg.eval.suite])


def play_all(player: Player, examples: Sequence[Example], env: EnvConfig, opponent: Opponent, *,
             max_batch: int | None = None, on_finished: Callable[[int], None] | None = None) -> list[GameRecord]:
    """One game per example, records in the order of `examples`: through the player's own
    `play_games` where it has one (a local transformers model: the batched KV-cache engine,
    `players.hf.HFPlayer.play_games`), else turn by turn through `env.driver.play_games`."""
    own = getattr(player, "play_games", None)
    if callable(own):
        return own(examples, env, opponent, max_batch=max_batch, on_finished=on_finished)
    return play_games(player, examples, env, opponent, max_batch=max_batch, on_finished=on_finished)


def play_suite(cfg: Config, player: Player, on_finished: Callable[[str, int], None] | None = None
               ) -> list[SuiteResult]:
    out = []
    for i, entry in enumerate(entries(cfg)):
        examples = suite_examples(cfg, i, entry)
        callback = (lambda n, name=entry.name: on_finished(name, n)) if on_finished else None
        start = time.perf_counter()
        records = play_all(player, examples, cfg.env, suite_opponent(entry), max_batch=cfg.eval.batch_size,
                           on_finished=callback)
        out.append(SuiteResult(entry, records, summarise(entry.name, records, time.perf_counter() - start)))
    return out
