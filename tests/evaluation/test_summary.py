"""Summaries of played games: counts, rates and the metric names MLflow receives."""

from __future__ import annotations

import csv
import dataclasses
import io

import pytest

from ttt_lab.env.dataset import make_dataset
from ttt_lab.env.driver import play_games
from ttt_lab.env.settings import DatasetConfig, EnvConfig
from ttt_lab.evaluation import tables
from ttt_lab.evaluation.suite import SuiteResult
from ttt_lab.evaluation.summary import paired, summarise
from ttt_lab.game.opponents import MinimaxOpponent, RandomOpponent
from ttt_lab.players.scripted import minimax_player, random_player


def records(player, opponent, n=40):
    examples = make_dataset(DatasetConfig(size=n, p_min=0.0, p_max=0.0, num_strata=1, model_symbol="alternate",
                                          first_player="alternate"), 1)
    return play_games(player, examples, EnvConfig(think="off"), opponent)


def test_perfect_play_never_loses_and_every_reply_is_in_format() -> None:
    s = summarise("optimal", records(minimax_player(think=False), MinimaxOpponent()))
    assert s.games == 40 and s.draws == 40 and s.wins == s.losses == 0
    assert s.format_rate == 1.0 and s.invalid_rate == 0.0
    m = s.metrics("eval")
    assert m["eval/optimal/draw_rate"] == 1.0 and m["eval/optimal/draw_rate_lo"] < 1.0
    assert m["eval/optimal/games"] == 40.0
    assert m["eval/optimal/invalid_rate_lo"] == 0.0 < m["eval/optimal/invalid_rate_hi"] < 0.1


def test_invalid_rate_interval_is_over_model_messages() -> None:
    s = summarise("random", records(random_player(think=False), RandomOpponent()))
    bad = dataclasses.replace(s, invalid_moves=s.model_messages // 4)
    lo, hi = bad.invalid_interval
    assert lo < bad.invalid_rate < hi and hi - lo < 0.5
    assert bad.metrics()["eval/random/invalid_rate_hi"] == hi


def test_counts_add_up_and_rates_are_shares_of_games() -> None:
    s = summarise("random", records(random_player(think=False), RandomOpponent()))
    assert s.wins + s.draws + s.losses == s.games
    assert s.rate(s.wins) == s.wins / s.games
    lo, hi = s.interval(s.wins)
    assert lo <= s.rate(s.wins) <= hi


def result(summary):
    from ttt_lab.config.schema import SuiteEntry

    return SuiteResult(SuiteEntry(summary.opponent), [], summary)


def test_csv_table_has_one_row_per_opponent_with_its_interval() -> None:
    a = summarise("optimal", records(minimax_player(think=False), MinimaxOpponent(), 10))
    b = summarise("random", records(minimax_player(think=False), RandomOpponent(), 10))
    rows = list(csv.DictReader(io.StringIO(tables.csv_text([result(a), result(b)]))))
    assert [r["opponent"] for r in rows] == ["optimal", "random"]
    assert float(rows[0]["draw_rate"]) == 1.0 and float(rows[0]["draw_lo"]) < 1.0


def test_a_paired_comparison_counts_the_games_each_policy_did_better_in() -> None:
    """Minimax and a random player on the same 60 games against a random opponent: minimax scores at
    least as much in almost every game, the split is far from even, and the metrics name the opponent."""
    weak = summarise("random", records(random_player(think=False), RandomOpponent(), 60))
    strong = summarise("random", records(minimax_player(think=False), RandomOpponent(), 60))
    gain = paired(weak, strong)
    assert gain.better > 3 * gain.worse and gain.p_value < 1e-4
    assert gain.points_delta == pytest.approx((sum(strong.points) - sum(weak.points)) / 60)
    assert paired(strong, weak).better == gain.worse and paired(weak, weak).p_value == 1.0
    assert set(gain.metrics()) == {f"eval_gain/random/{k}" for k in ("better", "worse", "p_value", "points_delta")}
    with pytest.raises(ValueError, match="same games"):
        paired(weak, summarise("random", records(random_player(think=False), RandomOpponent(), 20)))
