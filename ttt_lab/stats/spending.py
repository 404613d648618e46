"""How a fixed design spends its error rate over looks declared before the first trial:
Lan & DeMets' Pocock-type function alpha(t) = alpha ln(1 + (e - 1) t), t = seeds / the last
look's seeds (Biometrika 70, 1983). Look k may use alpha(t_k) - alpha(t_(k-1)); the shares sum to
alpha, so by the union bound the chance of any wrong claim over the declared looks is at most
alpha. A look the design did not declare has no share: raising the budget after a look would
re-divide what was already spent, which is why it is refused."""

from __future__ import annotations

import math
from collections.abc import Sequence


def spent(n: int, last: int, alpha: float) -> float:
    """The error rate spent once `n` seeds of a design ending at `last` are in."""
    t = min(1.0, n / last) if last > 0 else 1.0
    return alpha * math.log(1 + (math.e - 1) * t)


def shares(looks: Sequence[int], alpha: float) -> list[float]:
    """The error rate each declared look may use (they sum to alpha)."""
    out, before = [], 0.0
    for n in looks:
        now = spent(n, looks[-1], alpha)
        out.append(now - before)
        before = now
    return out
