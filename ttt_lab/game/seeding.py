"""Stable per-turn randomness: every random choice is a pure function of (seed, position).

A turn's 64-bit hash mixes a key derived from the example seed and a *stream* (which
player is choosing) with a key derived from the board's base-3 code and the side to move.
The mixing is SplitMix64's finaliser: stable across processes, platforms and Python
versions (unlike `hash`), and cheap enough to call on every turn. The low 32 bits pick an
index, the high 32 bits make a uniform number in [0, 1), so the two do not overlap.
"""

from __future__ import annotations

MASK64 = (1 << 64) - 1
OPPONENT_STREAM = 0x0770_0E11
PLAYER_STREAM = 0x0B1A_7E25


def mix64(x: int) -> int:
    """SplitMix64: a bijective, well-mixed map of 64-bit integers."""
    x = (x + 0x9E3779B97F4A7C15) & MASK64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & MASK64
    return x ^ (x >> 31)


def seed_key(seed: int, stream: int = OPPONENT_STREAM) -> int:
    """The key of one example's random stream for one chooser (any int seed, negative too)."""
    return mix64(mix64(seed & MASK64) ^ stream)


def position_key(board_code: int, x_to_move: bool) -> int:
    return mix64(2 * board_code + (0 if x_to_move else 1))


def uniform(h: int) -> float:
    """A number in [0, 1) from the high half of a turn hash."""
    return (h >> 32) * 2.0**-32


def pick(h: int, n: int) -> int:
    """An index in [0, n) from the low half of a turn hash (Lemire's multiply-shift)."""
    return ((h & 0xFFFFFFFF) * n) >> 32


def derive_seed(seed: int, index: int) -> int:
    """A 63-bit seed for item `index` of a collection seeded with `seed`."""
    return mix64(mix64(seed & MASK64) ^ (index & MASK64)) >> 1
