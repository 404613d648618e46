"""User-defined opponents, loaded by `_target_` like a user's own class would be."""

from __future__ import annotations

import hashlib
import random

from ttt_lab.game import fastest_moves, legal_moves, optimal_moves


def _hash_pick(board: str, seed: int, options: list[int]) -> int:
    digest = hashlib.sha256(f"{seed}:{board}".encode()).digest()
    return options[int.from_bytes(digest[:8], "big") % len(options)]


class FirstChoiceOpponent:
    """Optimal, always the lowest-numbered of the equally good moves (the published bias)."""

    def reply(self, board: str, seed: int) -> int:
        return min(optimal_moves(board))


class FairOpponent:
    """Optimal, ties broken by a stable hash of (seed, board); takes `p_random` like the built-ins."""

    def __init__(self, p_random: float = 0.0) -> None:
        self.p_random = p_random

    def reply(self, board: str, seed: int) -> int:
        digest = hashlib.sha256(f"noise:{seed}:{board}".encode()).digest()
        if int.from_bytes(digest[:8], "big") / 2**64 < self.p_random:
            return _hash_pick(board, seed, sorted(legal_moves(board)))
        return _hash_pick(board, seed, sorted(optimal_moves(board)))


class HalfNoiseOpponent(FairOpponent):
    """Claims `p_random` but plays a random move only half as often."""

    def __init__(self, p_random: float = 0.0) -> None:
        super().__init__(p_random / 2)


class CarelessOpponent(FairOpponent):
    """Optimal except on the empty board's neighbours: plays the lowest free cell when X has one mark."""

    def reply(self, board: str, seed: int) -> int:
        if board.count("X") == 1 and board.count("O") == 0:
            return min(legal_moves(board))
        return super().reply(board, seed)


class UnseededOpponent:
    """Ignores the seed: a process-global random stream (the unseeded published opponent)."""

    def reply(self, board: str, seed: int) -> int:
        return random.choice(sorted(optimal_moves(board)))


class FastFairOpponent:
    """Uniform among the fastest-win / slowest-loss moves (the rule the published environment
    ended with), written as a user's class: a fair opponent that never meant to choose among
    every value-keeping move."""

    def reply(self, board: str, seed: int) -> int:
        return _hash_pick(board, seed, sorted(fastest_moves(board)))


class FastFirstOpponent:
    """The lowest-numbered of the fastest moves: biased within the set it draws from."""

    def reply(self, board: str, seed: int) -> int:
        return min(fastest_moves(board))
