"""The verifiable core: board, rules, perfect-play solver, symmetries, seeding, opponents.

Standard library only, so it imports in milliseconds and tests run fast.
"""

from ttt_lab.game.board import EMPTY, legal_moves, play, side_to_move, validate_board, winner
from ttt_lab.game.solver import exploiting_moves, fastest_moves, optimal_moves, reachable_positions, value

__all__ = [
    "EMPTY", "exploiting_moves", "fastest_moves", "legal_moves", "optimal_moves", "play", "reachable_positions",
    "side_to_move", "validate_board", "value", "winner",
]
