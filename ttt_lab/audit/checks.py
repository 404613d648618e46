"""A check is one measured value against its thresholds; an audit is a list of them."""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from typing import Any

PASS, WARN, FAIL, SKIP = "PASS", "WARN", "FAIL", "SKIP"
RANK = {SKIP: 0, PASS: 1, WARN: 2, FAIL: 3}


@dataclass
class Check:
    name: str
    value: float | None
    threshold: str
    """The rule in words, e.g. '<= 0.02 (warn) / <= 0.2 (fail)'."""
    status: str
    detail: str = ""

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        if self.value is not None and not math.isfinite(self.value):
            out["value"] = None
        return out


def upper(name: str, value: float, warn: float, fail: float, detail: str = "") -> Check:
    """A check where larger is worse."""
    status = FAIL if value > fail else WARN if value > warn else PASS
    return Check(name, value, f"PASS <= {warn:g} < WARN <= {fail:g} < FAIL", status, detail)


def lower(name: str, value: float, warn: float, fail: float, detail: str = "") -> Check:
    """A check where smaller is worse (p-values, entropies, shares)."""
    status = FAIL if value < fail else WARN if value < warn else PASS
    return Check(name, value, f"FAIL < {fail:g} <= WARN < {warn:g} <= PASS", status, detail)


def skipped(name: str, why: str) -> Check:
    return Check(name, None, "-", SKIP, why)


@dataclass
class Audit:
    kind: str
    subject: str
    """What was audited, in words (an opponent's repr, a dataset's source, a player)."""
    checks: list[Check] = field(default_factory=list)
    data: dict[str, Any] = field(default_factory=dict)
    """Figures' inputs (heat maps, histograms, per-member rates) for the HTML/Markdown output."""
    seconds: float = 0.0

    @property
    def status(self) -> str:
        return max((c.status for c in self.checks), key=RANK.__getitem__, default=PASS)

    def check(self, name: str) -> Check:
        return next(c for c in self.checks if c.name == name)

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "subject": self.subject, "status": self.status, "seconds": round(self.seconds, 3),
                "checks": [c.as_dict() for c in self.checks], "data": self.data}

    def to_json(self) -> str:
        return json.dumps(self.as_dict(), indent=2, sort_keys=False) + "\n"

    def metrics(self) -> dict[str, float]:
        """`audit/<kind>/<check>` values and `…/<check>/status` (0 pass, 1 warn, 2 fail) for MLflow."""
        out: dict[str, float] = {}
        for c in self.checks:
            if c.status == SKIP:
                continue
            key = f"audit/{self.kind}/{c.name}"
            if c.value is not None and math.isfinite(c.value):
                out[key] = float(c.value)
            out[f"{key}/status"] = float(RANK[c.status] - 1)
        return out
