"""Walk a finished game's moves through the solver table (shared by tests that check move choices)."""

from ttt_lab.env.record import GameRecord
from ttt_lab.game.solver import table


def model_moves(record: GameRecord) -> list[tuple[int, int]]:
    """(state before the move, cell) for each of the model's moves, in play order."""
    t, state, out = table(), 0, []
    for by, cell in record.moves:
        if by == "model":
            out.append((state, cell))
        state = t.children[state][cell]
    return out
