"""Optuna search spaces from Hydra sweep syntax: `interval(a,b)` -> float/int range,
`tag(log, interval(a,b))` -> log scale, `choice(…)` / `a,b` / `range(…)` -> categorical."""

from __future__ import annotations

from typing import Any

from ttt_lab.studies.grid import values
from ttt_lab.studies.spec import StudyError, StudySpec


def _leaf(tree: Any, path: str) -> Any:
    node = tree
    for part in path.split("."):
        node = node[int(part)] if isinstance(node, list) else node[part]
    return node


def is_categorical(key: str, tree: dict[str, Any]) -> bool:
    from ttt_lab.config import overrides as ov
    from ttt_lab.config.load import aliases, groups

    if key in groups():
        return True
    paths = [p.split("=", 1)[0] for p in ov.resolve([f"{key}=0"], aliases(), tree, groups())]
    try:
        leaves = [_leaf(tree, p) for p in paths]
    except (KeyError, IndexError, ValueError, TypeError):
        raise StudyError(f"{key!r} is not a key of the configuration; see `ttt-lab config show`.") from None
    return any(isinstance(v, str | bool) or v is None for v in leaves)


def distributions(spec: StudySpec, tree: dict[str, Any]) -> dict[str, Any]:
    import optuna.distributions as d
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.core.override_parser.types import IntervalSweep

    out: dict[str, Any] = {}
    for key, expr in spec.params.items():
        (parsed,) = OverridesParser.create().parse_overrides([f"{key}={expr}"])
        if parsed.is_interval_sweep():
            if is_categorical(key, tree):
                raise StudyError(f"{key}={expr}: an interval on a categorical field (its values are names, not "
                                 f"numbers). Use choice(...) for {key}.")
            iv = parsed.value()
            assert isinstance(iv, IntervalSweep) and iv.start is not None and iv.end is not None
            log = "log" in iv.tags
            try:
                if isinstance(iv.start, int) and isinstance(iv.end, int) and not isinstance(_base(key, tree), float):
                    out[key] = d.IntDistribution(int(iv.start), int(iv.end), log=log)
                else:
                    out[key] = d.FloatDistribution(float(iv.start), float(iv.end), log=log)
            except ValueError as e:  # Optuna's word on an empty or non-positive log range
                raise StudyError(f"{key}={expr} is not a range Optuna can sample ({e}). Give interval(low, high) "
                                 "with low < high, and low > 0 on a log scale: tag(log, interval(1e-5, 1e-3)).") \
                    from None
        else:
            out[key] = d.CategoricalDistribution(values(key, expr))
    return out


def _base(key: str, tree: dict[str, Any]) -> Any:
    from ttt_lab.config import overrides as ov
    from ttt_lab.config.load import aliases, groups

    paths = [p.split("=", 1)[0] for p in ov.resolve([f"{key}=0"], aliases(), tree, groups())]
    return _leaf(tree, paths[0]) if paths else None


def to_overrides(params: dict[str, Any]) -> list[str]:
    return [f"{k}={v!r}" if isinstance(v, float) else f"{k}={v}" for k, v in params.items()]
