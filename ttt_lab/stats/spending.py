"""How a fixed design spends its error rate over looks declared before the first trial:
Lan & DeMets' Pocock-type function alpha(t) = alpha ln(1 + (e - 1) t), t = seeds / the last
look's seeds (Biometrika 70, 1983). Look k may use alpha(t_k) - alpha(t_(k-1)); the shares sum to
alpha, so by the union bound the chance of any wrong claim over the declared looks is at most
alpha. A look whose seeds cannot reach its share (an exact sign test's smallest p-value at n seeds
is 2^(1 - n)) passes its share on to the next look instead of wasting it; that is known from the
design alone, before any data. A look the design did not declare has no share: raising the budget
after a look would re-divide what was already spent, which is why it is refused."""

from __future__ import annotations

import math
from collections.abc import Sequence


def spent(n: int, last: int, alpha: float) -> float:
    """The error rate the Pocock-type function spends once `n` seeds of a design ending at `last` are in."""
    t = min(1.0, n / last) if last > 0 else 1.0
    return alpha * math.log(1 + (math.e - 1) * t)


def floor(n: int) -> float:
    """The smallest p-value an exact two-sided sign test on n seeds can give."""
    return 2.0 ** (1 - n) if n > 0 else 1.0


def usable_shares(looks: Sequence[int], alpha: float, family: int = 1) -> list[float]:
    """The error rate each declared look may use (they sum to alpha): the Pocock-type shares, with a
    look whose seeds cannot reach share / family (Holm's first step) passing its share on."""
    out, carried, before = [], 0.0, 0.0
    for n in looks:
        now = spent(n, looks[-1], alpha)
        share = now - before + carried
        before = now
        if floor(n) <= share / max(1, family) or n == looks[-1]:
            out.append(share)
            carried = 0.0
        else:
            out.append(0.0)
            carried = share
    return out
