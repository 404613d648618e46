"""The schema's `eval:` and `tracking:` sections: which opponents a player is evaluated against and
how, and where runs are tracked (part of `config.schema`, which re-exports every name here)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ttt_lab.env.settings import check_integer, check_number, check_one_of
from ttt_lab.errors import InvalidSetting
from ttt_lab.game.opponents import SCORINGS, TIE_BREAKS

OPPONENT_KINDS = ("minimax", "random")
EVAL_MODES = ("auto", "exact", "sampled")


@dataclass
class SuiteEntry:
    name: str = "optimal"
    """The entry's name in the metrics (`eval/NAME/win_rate`, ...)."""
    opponent: str = "minimax"
    """An opponent, as `opponent=` names one (random, minimax, ...)."""
    tie_break: str = "random"
    """How the opponent chooses among equally good moves, as `opponent.tie_break`."""
    scoring: str = "value"
    """How the opponent scores moves, as `opponent.scoring`."""
    p_random: float = 0.0
    """The chance the opponent plays a uniformly random move instead, each turn."""


def _default_suites() -> dict[str, list[SuiteEntry]]:
    return {
        "default": [
            SuiteEntry("random", opponent="random"),
            SuiteEntry("optimal"),
            SuiteEntry("minimax_p25", p_random=0.25),
            SuiteEntry("minimax_p50", p_random=0.5),
        ],
        "quick": [SuiteEntry("random", opponent="random"), SuiteEntry("optimal")],
        "tiebreak": [
            SuiteEntry("optimal_first", tie_break="first"),
            SuiteEntry("optimal_last", tie_break="last"),
            SuiteEntry("optimal_random"),
        ],
    }


@dataclass
class EvalConfig:
    suite: str = "default"
    """The opponents a policy is evaluated against: the name of a list in `eval.suites` (shipped:
    default, quick, tiebreak; a config may add its own)."""
    games: int = 200
    """Games per opponent of the suite, split evenly over who moves first."""
    batch_size: int = 256
    transcript: bool = True
    """Sampled mode: every game's conversation as JSONL beside the run."""
    mode: str = "auto"
    """exact | sampled | auto. exact: the policy's expected rates from its game tree (every opponent
    reply weighted by its probability, every policy reply by its own): no sampling noise, `games`
    unused. sampled: `games` games per opponent. auto: exact where the policy's move distribution
    can be read off (scripted players; model players when greedy, or sampling bare moves)."""
    min_prob: float = 1.0e-7
    """Exact mode: paths less likely than this are not followed; their probability is reported as
    `unexplored` and bounds every rate (`*_lo`, `*_hi`)."""
    suites: dict[str, list[SuiteEntry]] = field(default_factory=_default_suites)
    """Named opponent lists, each entry an opponent evaluated under its `name` (the metrics'
    `eval/NAME/...`)."""


@dataclass
class TrackingConfig:
    enabled: bool = True
    uri: str = "sqlite:///${home}/mlflow.db"
    artifacts: str = "${home}/mlartifacts"
    experiment: str = "ttt-lab"
    outage_wait_s: float = 60.0
    """A run whose tracking server is unreachable when it ends waits this long for it to come
    back, then leaves what it could not send in `${home}/tracking-fallback/` for `ttt-lab runs sync`."""


def validate_eval(e: EvalConfig) -> None:
    """The `eval:` section's ranges and choices, each suite entry named by its dotted key."""
    check_integer("eval.games", e.games, 1)
    check_integer("eval.batch_size", e.batch_size, 1)
    check_one_of("eval.mode", e.mode, EVAL_MODES)
    check_number("eval.min_prob", e.min_prob, 0.0, 0.5)
    if e.suite not in e.suites:
        raise InvalidSetting("eval.suite", e.suite, " | ".join(e.suites))
    for name, entries in e.suites.items():
        for i, entry in enumerate(entries):
            check_one_of(f"eval.suites.{name}.{i}.opponent", entry.opponent, OPPONENT_KINDS)
            check_one_of(f"eval.suites.{name}.{i}.tie_break", entry.tie_break, TIE_BREAKS)
            check_one_of(f"eval.suites.{name}.{i}.scoring", entry.scoring, SCORINGS)
            check_number(f"eval.suites.{name}.{i}.p_random", entry.p_random, 0.0, 1.0)


def validate_tracking(t: TrackingConfig) -> None:
    """The experiment name becomes a folder and an MLflow name: letters, digits and `._-` only."""
    from ttt_lab.names import PATTERN

    if not PATTERN.fullmatch(t.experiment) or ".." in t.experiment:
        raise InvalidSetting("tracking.experiment", t.experiment,
                             "letters, digits and . _ - (starting with a letter or digit, no '..' or '/')")
    check_number("tracking.outage_wait_s", t.outage_wait_s, 0.0)
