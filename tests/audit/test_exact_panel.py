"""The policy audit on the exact tree walk: the same panel, expected rates instead of games."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.audit.memoriser import BookOpponent
from ttt_lab.audit.checks import FAIL, PASS, WARN
from ttt_lab.audit.exact_panel import ExactMember, fork_open, member_distribution
from ttt_lab.audit.policy import ConjugatedOpponent, audit_policy, exact_memorisation_check, fork_allowed, panel
from ttt_lab.config.load import load
from ttt_lab.env.dataset import Example
from ttt_lab.env.record import GameRecord
from ttt_lab.env.rubric import Rewards
from ttt_lab.game.opponents import MinimaxOpponent
from ttt_lab.game.solver import table
from ttt_lab.players.scripted import ScriptedPlayer, minimax_player

OPEN = [s for s in range(len(table().boards)) if not table().terminal[s]]


def cfg(*overrides: str):
    return load(["audit.policy.games=8", "env.think=off", *overrides]).cfg


def test_deterministic_members_give_the_sampled_panels_rates_exactly():
    """Without noise a deterministic member plays one game per start: the sampled panel's rates
    (8 games, the four starts twice) are the exact ones."""
    c_exact, c_sampled = cfg("audit.policy.noise=0"), cfg("audit.policy.noise=0", "eval.mode=sampled")
    player, training = ScriptedPlayer(BookOpponent(), think=False), MinimaxOpponent("first")
    exact = {m["name"]: m for m in audit_policy(c_exact, player, training).data["members"]}
    sampled = {m["name"]: m for m in audit_policy(c_sampled, player, training).data["members"]}
    assert all(m["mode"] == "exact" for m in exact.values()) and "mode" not in next(iter(sampled.values()))
    deterministic = ["minimax-first", "minimax-last", *(n for n in exact if n.startswith("training@"))]
    for name in deterministic:
        assert exact[name]["held_rate"] == pytest.approx(sampled[name]["held_rate"]), name
        assert exact[name]["loss_rate"] == pytest.approx(sampled[name]["loss_rate"]), name
    assert len({exact[n]["held_rate"] for n in deterministic}) > 1  # the memoriser is not held alike by all


def test_a_memorising_policy_fails_the_exact_probe_and_an_optimal_one_passes():
    c = cfg("tie_break=first")
    memoriser = audit_policy(c, ScriptedPlayer(BookOpponent(), think=False),
                             MinimaxOpponent("first", p_random=c.audit.policy.noise))
    assert memoriser.data["mode"] == "exact"
    assert len(memoriser.data["members"]) == len(panel(MinimaxOpponent(), "value", 1))  # seed sets: one in expectation
    gap = memoriser.check("memorisation.gap")
    assert gap.status == FAIL and gap.value > 0.3 and "exact" in gap.detail, gap.detail
    assert memoriser.check("optimal_agreement").value < 0.9 and memoriser.check("fork_allowed_rate").value > 0
    optimal = audit_policy(c, minimax_player(think=False), MinimaxOpponent("random"))
    assert optimal.status == PASS, [ch.detail for ch in optimal.checks]
    assert all(m["held_rate"] == pytest.approx(1.0) and m["unexplored"] == 0 for m in optimal.data["members"])
    assert optimal.check("fork_allowed_rate").value == 0 and optimal.check("optimal_agreement").value == 1.0


def _member(name: str, held: float, unexplored: float = 0.0) -> ExactMember:
    return ExactMember(name, 0.0, held, 1.0 - held - unexplored, unexplored, 0.0, 1.0, 1.0, 0.0)


@given(st.floats(0, 1), st.floats(0, 1), st.floats(0, 0.2), st.floats(0.01, 0.5))
def test_the_exact_gap_fails_only_beyond_the_margin_at_the_cut_paths_worst(mine, rest, cut, margin):
    rest = min(rest, 1 - cut)
    check = exact_memorisation_check([_member("t", mine), _member("r", rest, cut)], [True, False], margin)
    assert check.value == pytest.approx(mine - rest)
    assert check.status == (FAIL if mine - rest - cut > margin else WARN if mine - rest > margin else PASS)


def _game(moves: list[int], model_first: bool) -> GameRecord:
    t = table()
    s, played = 0, []
    for i, cell in enumerate(moves):
        if t.terminal[s] or cell not in t.legal[s]:
            break
        played.append(("model" if (i % 2 == 0) == model_first else "opponent", cell))
        s = t.children[s][cell]
    return GameRecord(Example(0, 0, 0.0, model_first, "X", 0), [], played, "", "X" if model_first else "O", "draw",
                      0, 0, 0, {}, Rewards(0.0, 0.0, 0.0, 0.0))


@settings(max_examples=300)
@given(st.permutations(range(9)), st.booleans())
def test_fork_open_is_the_sampled_audits_fork_rule_move_by_move(order, model_first):
    record = _game(list(order), model_first)
    t, s, seen = table(), 0, False
    for by, cell in record.moves:
        s = t.children[s][cell]
        seen |= by == "model" and not t.terminal[s] and fork_open(s)
    assert seen == fork_allowed(record)


@given(st.sampled_from(OPEN), st.integers(0, 7), st.sampled_from(["first", "last", "random"]),
       st.integers(0, 2**40))
def test_a_turned_members_distribution_is_what_it_plays(state, k, tie_break, seed):
    member = ConjugatedOpponent(MinimaxOpponent(tie_break), k)
    dist = member_distribution(member)
    assert dist is not None
    got = dist(state)
    assert sum(got.values()) == pytest.approx(1.0)
    move = member.reply(table().boards[state], seed)
    assert move in got
    if tie_break != "random":
        assert got == {move: 1.0}
