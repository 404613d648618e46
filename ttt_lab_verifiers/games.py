"""The games of ttt-lab's verifiers environment, built from ttt-lab's own config (no verifiers here).

Two splits: `eval` is exactly what `ttt-lab eval` plays (every suite entry's examples against its
opponent), `train` is the configured dataset (`dataset.*`, `seed`) against the configured opponent
(`opponent.*`). Each game is named by (split, entry, example index) and rebuilt from the same
settings wherever it is played, so the environment holds no second copy of any rule: the episode,
parser, rubric, opponents and datasets are ttt-lab's.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from ttt_lab.config.build import build_opponent, suite_opponent
from ttt_lab.config.load import Loaded, load
from ttt_lab.env.dataset import Example, make_dataset
from ttt_lab.env.episode import Episode, opponent_seed
from ttt_lab.evaluation.suite import entries, suite_examples
from ttt_lab.game.opponents import Opponent

SPLITS = ("eval", "train")
TRAIN_ENTRY = "train"


@dataclass(frozen=True)
class Game:
    """One game to play: which opponent (a suite entry's name, or `train`), and its example."""

    split: str
    entry: str
    entry_index: int
    example: Example

    @property
    def name(self) -> str:
        return f"{self.entry}#{self.example.index}"


@cache
def settings(overrides: tuple[str, ...]) -> Loaded:
    """ttt-lab's configuration for these overrides (the CLI's own composition and checks), on the
    schema's settings, the published environment (thinking allowed, ten turns): the root's preset
    is the tiny offline model's, and a model served to this environment is not that model. An
    `experiment=` override chooses a preset all the same."""
    named = any(o.lstrip("+~").startswith("experiment") for o in overrides)
    return load(list(overrides) if named else ["~experiment", *overrides])


def games(loaded: Loaded, split: str) -> list[Game]:
    cfg = loaded.cfg
    if split == "train":
        return [Game(split, TRAIN_ENTRY, -1, ex) for ex in make_dataset(cfg.dataset, cfg.seed)]
    if split == "eval":
        return [Game(split, entry.name, i, ex) for i, entry in enumerate(entries(cfg))
                for ex in suite_examples(cfg, i, entry)]
    raise ValueError(f"split={split!r} is not a split of ttt-lab's environment; use one of {', '.join(SPLITS)}")


class Opponents:
    """The opponents of a split, built once each (a table opponent precomputes its replies)."""

    def __init__(self, loaded: Loaded, split: str) -> None:
        self.loaded, self.split = loaded, split
        self._built: dict[int, Opponent] = {}

    def get(self, entry_index: int) -> Opponent:
        if entry_index not in self._built:
            cfg = self.loaded.cfg
            self._built[entry_index] = (build_opponent(cfg.opponent) if self.split == "train"
                                        else suite_opponent(entries(cfg)[entry_index]))
        return self._built[entry_index]

    def episode(self, game: Game) -> Episode:
        """A fresh episode of `game`: its opening messages are the task's prompt; replies drive it.

        Evaluation games meet the example's own dice (as `ttt-lab eval`); training games follow
        `opponent.seeding`, numbered by their example (a verifiers task is one example).
        """
        seed = None
        if game.split == "train":
            seed = opponent_seed(game.example, game.example.index, self.loaded.cfg.opponent.seeding)
        return Episode(game.example, self.loaded.cfg.env, self.get(game.entry_index), seed)
