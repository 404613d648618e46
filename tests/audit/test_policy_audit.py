from hypothesis import given
from hypothesis import strategies as st

from tests.audit.memoriser import MemorisingPlayer
from ttt_lab.audit.checks import FAIL, PASS
from ttt_lab.audit.policy import ConjugatedOpponent, agreement, audit_policy, fork_allowed, panel
from ttt_lab.config.load import load
from ttt_lab.env.dataset import Example
from ttt_lab.env.record import GameRecord
from ttt_lab.env.rubric import Rewards
from ttt_lab.game import optimal_moves
from ttt_lab.game.opponents import MinimaxOpponent
from ttt_lab.game.solver import table
from ttt_lab.players.scripted import minimax_player


def cfg(*overrides: str):
    return load(["audit.policy.games=40", *overrides]).cfg


def test_memorising_policy_fails_the_probe():
    c = cfg("tie_break=first")
    audit = audit_policy(c, MemorisingPlayer(c.env.think != "off"),
                         MinimaxOpponent("first", p_random=c.audit.policy.noise))
    members = {m["name"]: m for m in audit.data["members"]}
    training = [m for m in audit.data["members"] if m["training"]]
    assert {m["name"] for m in training} == {"minimax-first", "training@identity"}
    assert members["training@identity"]["held_rate"] > members["training@rot90"]["held_rate"] + 0.3
    assert all(1 < m["distinct_games"] <= m["games"] for m in audit.data["members"])
    check = audit.check("memorisation.gap")
    assert check.status == FAIL, check.detail
    assert audit.check("optimal_agreement").value < 1.0
    tree = audit.data["tree"]  # every reply finds the lines its book does not cover
    assert audit.check("tree.lines_not_held").value == tree["not_held"] > 0 and tree["forks_allowed"] > 0
    assert tree["optimal_agreement"] < 1.0 and tree["disagreements"]


def test_minimax_player_draws_against_every_member_and_passes():
    c = cfg("eval.mode=sampled")  # the sampled panel (tests/audit/test_exact_panel.py: the exact one)
    audit = audit_policy(c, minimax_player(), MinimaxOpponent("random"))
    assert audit.status == PASS
    assert len(audit.data["members"]) == len(panel(MinimaxOpponent(), "value", 3)) == 13
    assert all(m["held_rate"] == 1.0 for m in audit.data["members"])
    assert audit.check("fork_allowed_rate").value == 0.0
    assert audit.check("optimal_agreement").value == 1.0
    assert audit.check("tree.lines_not_held").status == PASS
    assert audit.data["tree"]["not_held"] == audit.data["tree"]["forks_allowed"] == 0
    assert audit.data["tree"]["invalid_lines"] == 0
    assert audit.data["tree"]["games"] > 500


@given(st.sampled_from([s for s in range(len(table().boards)) if not table().terminal[s]]),
       st.integers(0, 7), st.integers(0, 2**40), st.sampled_from(["first", "last", "random"]))
def test_a_turned_optimal_opponent_is_still_optimal(state, k, seed, tie_break):
    board = table().boards[state]
    move = ConjugatedOpponent(MinimaxOpponent(tie_break), k).reply(board, seed)
    assert move in optimal_moves(board)


def _record(moves: list[tuple[str, int]], mark: str = "X") -> GameRecord:
    example = Example(0, 0, 0.0, mark == "X", "X", 0)
    return GameRecord(example, [], moves, "", mark, "loss", 0, 0, 0, {}, Rewards(0.0, 0.0, 0.0, 0.0))


def test_fork_allowed_is_detected():
    # The model (O) answers a corner with an edge, then blocks; X's corner move makes two threats.
    forked = _record([("opponent", 0), ("model", 1), ("opponent", 4), ("model", 8)], "O")
    assert fork_allowed(forked)
    safe = _record([("model", 4), ("opponent", 0), ("model", 2)], "X")
    assert not fork_allowed(safe)


def test_agreement_names_the_wrong_moves():
    share, worst = agreement([_record([("opponent", 0), ("model", 1), ("opponent", 4), ("model", 8)], "O")])
    assert share == 0.5
    assert worst == [{"board": "X........", "move": 1, "optimal": [4], "count": 1}]


def test_a_fair_trained_policy_that_beats_a_deterministic_member_is_not_memorising():
    """Trained against the random tie-break, the policy plays the first-tie-break member well
    (it is easy to hold): not memorisation, the policy never met it. Without noise, the games
    against a deterministic member are copies, and the intervals say so."""
    c = cfg()
    audit = audit_policy(c, MemorisingPlayer(), MinimaxOpponent("random", p_random=c.audit.policy.noise))
    assert audit.check("memorisation.gap").status != FAIL, audit.check("memorisation.gap").detail
    exact = audit_policy(cfg("audit.policy.noise=0"), MemorisingPlayer(), MinimaxOpponent("random"))
    first = next(m for m in exact.data["members"] if m["name"] == "minimax-first")
    assert first["games"] == 40 and first["distinct_games"] <= 2 and first["held_rate"] == 1.0
    assert first["held_lo"] < 0.5, "two distinct games cannot give a tight interval"


def test_the_tree_check_can_be_left_out():
    audit = audit_policy(cfg("audit.policy.tree=false"), minimax_player(), MinimaxOpponent("random"))
    assert "tree.lines_not_held" not in {c.name for c in audit.checks} and audit.data["tree"] is None


class FirstTryOccupied:
    """Minimax, except that its first reply to a board the opponent has marked names one of the
    opponent's cells (invalid); after the feedback it plays minimax's move."""

    def __init__(self) -> None:
        self.minimax = minimax_player(think=False)

    def respond(self, turns) -> list[str]:
        fair = self.minimax.respond(turns)
        out = []
        for turn, move in zip(turns, fair, strict=True):
            tries = sum(m["role"] == "assistant" for m in turn.messages)
            theirs = [i for i, c in enumerate(turn.board) if c not in (".", turn.model_mark)]
            out.append(f"<move>{theirs[0]}</move>" if theirs and tries == turn.board.count(turn.model_mark) else move)
        return out


def test_the_tree_counts_the_lines_with_an_invalid_reply():
    from ttt_lab.audit.policy import tree_check

    c = cfg("env.think=off")
    check, data = tree_check(FirstTryOccupied(), c)
    assert data["not_held"] == 0  # every invalid reply is retried, and minimax holds
    assert data["invalid_lines"] == data["games"]  # every line meets a board the opponent has marked
    assert "with an invalid reply" in check.detail
    _, fair = tree_check(minimax_player(think=False), c)
    assert fair["invalid_lines"] == 0 and fair["games"] == data["games"]
