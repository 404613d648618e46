"""Environment benchmarks: one command, numbers and ratios against a baseline measured in
the same run (a re-implementation of the published environment's game logic: memoised
recursive minimax, a fresh `random.Random(f"{seed}_{board}")` on every opponent turn).

    python benchmarks/bench_env.py [--games N]
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Callable
from functools import cache

from ttt_lab.env.dataset import make_dataset
from ttt_lab.env.driver import play_games
from ttt_lab.env.settings import DatasetConfig, EnvConfig
from ttt_lab.game import solver
from ttt_lab.game.board import EMPTY, LINES
from ttt_lab.game.opponents import MinimaxOpponent, RandomOpponent, TableOpponent
from ttt_lab.game.seeding import PLAYER_STREAM
from ttt_lab.players.scripted import random_player


def play_many(x: TableOpponent, o: TableOpponent, seeds: range | list[int]) -> dict[str, int]:
    """Tally of winners ('X', 'O', 'draw') over one game per seed between two table opponents:
    the tight loop this benchmark times."""
    t = solver.table()
    children, terminal, winners = t.children, t.terminal, t.winner
    rx, ro = x.reply_state, o.reply_state
    px, po = x.p_random, o.p_random
    kx_of, ko_of = x.key, o.key
    tally = {"X": 0, "O": 0, "draw": 0}
    for seed in seeds:
        kx, ko = kx_of(seed), ko_of(seed)
        state = 0
        while True:
            state = children[state][rx(state, kx, px)]
            if terminal[state]:
                break
            state = children[state][ro(state, ko, po)]
            if terminal[state]:
                break
        tally[winners[state] or "draw"] += 1
    return tally


def best_of(fn: Callable[[], object], repeats: int = 3) -> float:
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


# --- baseline: the published environment's approach ----------------------------------
def _ref_winner(b: str) -> str | None:
    for x, y, z in LINES:
        if b[x] != "." and b[x] == b[y] == b[z]:
            return b[x]
    return None


@cache
def _ref_minimax(b: str, me: str) -> tuple[int, tuple[int, ...]]:
    w = _ref_winner(b)
    if w is not None:
        return (1 if w == me else -1), ()
    free = [i for i, s in enumerate(b) if s == "."]
    if not free:
        return 0, ()
    turn = "X" if b.count("X") == b.count("O") else "O"
    scores = {}
    for m in free:
        child = b[:m] + turn + b[m + 1 :]
        scores[m] = _ref_minimax(child, me)[0]
    best = max(scores.values()) if turn == me else min(scores.values())
    return best, tuple(m for m, s in scores.items() if s == best)


def baseline_games(n: int, p_random: float = 0.3) -> None:
    for seed in range(n):
        b = EMPTY
        player_rng = random.Random(seed)
        while _ref_winner(b) is None and "." in b:
            free = [i for i, s in enumerate(b) if s == "."]
            turn = "X" if b.count("X") == b.count("O") else "O"
            if turn == "X":
                m = player_rng.choice(free)
            else:
                rng = random.Random(f"{seed}_{b}")
                m = rng.choice(free) if rng.random() < p_random else rng.choice(_ref_minimax(b, "O")[1])
            b = b[:m] + turn + b[m + 1 :]


# --- ttt-lab -------------------------------------------------------------------------
def mid_game_positions(n: int) -> list[int]:
    t = solver.table()
    rng = random.Random(0)
    pool = [s for s in range(len(t.boards)) if not t.terminal[s] and 2 <= 9 - t.boards[s].count(".") <= 6]
    return [rng.choice(pool) for _ in range(n)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--games", type=int, default=100_000)
    n = ap.parse_args().games

    builds = []
    for _ in range(5):
        solver.table.cache_clear()
        builds.append(best_of(solver.table, 1))
    build_ms = min(builds) * 1000

    opp = MinimaxOpponent(p_random=0.3)
    states = mid_game_positions(n)
    keys = [opp.key(i) for i in range(n)]
    reply = opp.reply_state
    a = n / best_of(lambda: [reply(s, k, 0.3) for s, k in zip(states, keys, strict=True)])
    boards = [solver.table().boards[s] for s in states]
    a_public = n / best_of(lambda: [opp.reply(b, i) for i, b in enumerate(boards)])

    rnd = RandomOpponent(stream=PLAYER_STREAM)
    b = n / best_of(lambda: play_many(rnd, opp, range(n)))
    base_n = max(n // 10, 1000)
    _ref_minimax.cache_clear()
    base = base_n / best_of(lambda: baseline_games(base_n))

    m = max(n // 5, 1000)
    examples = make_dataset(DatasetConfig(size=m, examples_per_batch=256), 0)
    env, player = EnvConfig(), random_player()
    c = m / best_of(lambda: play_games(player, examples, env, opp))

    rows = [
        ("(a) opponent replies/s, state API", a, None, None),
        ("(a) opponent replies/s, reply(board, seed)", a_public, None, None),
        ("(b) games/s, random vs minimax, seeded per turn", b, base, 100_000),
        ("(c) games/s, full environment path", c, base, 20_000),
    ]
    print(f"baseline (published game logic, random vs memoised minimax): {base:,.0f} games/s")
    print(f"{'measure':50s} {'value':>12s} {'x baseline':>11s} {'goal':>10s}")
    for name, v, ref, goal in rows:
        ratio = f"{v / ref:10.1f}x" if ref else f"{'':11s}"
        g = f"{goal:>10,}" if goal else ""
        print(f"{name:50s} {v:12,.0f} {ratio} {g}")
    print(f"{'(d) solver build, ms (best of 5)':50s} {build_ms:12.1f} {'':11s} {'100':>10s}")


if __name__ == "__main__":
    main()
