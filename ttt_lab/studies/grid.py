"""Grid expansion with Hydra's own override parser: `a,b`, `range()`, `choice()`, `glob()`."""

from __future__ import annotations

import itertools

from ttt_lab.studies.spec import StudyError, StudySpec


def values(key: str, expr: str) -> list[str]:
    """The values one sweep expression stands for, as override strings."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.core.override_parser.types import Glob
    from hydra.errors import OverrideParseException

    try:
        (parsed,) = OverridesParser.create().parse_overrides([f"{key}={expr}"])
    except OverrideParseException as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise StudyError(f"the values of {key} ({expr!r}) are not Hydra sweep syntax ({first}). Write them as "
                         "a,b,c, range(0,3), choice(a,b) or interval(1e-5,1e-3); quote a value that holds "
                         "= or a comma.") from None
    if not parsed.is_sweep_override():
        return [parsed.get_value_element_as_str()]
    if parsed.is_interval_sweep():
        raise StudyError(f"{key}={expr} is a continuous interval: a grid cannot enumerate it. Use a search "
                         "(n_trials, e.g. --trials 20) or list values: key=a,b,c.")
    value = parsed.value()
    if isinstance(value, Glob):
        from ttt_lab.config.load import group_options

        options = group_options(key)  # the shipped options and the user's (--config-dir)
        if not options:
            raise StudyError(f"glob() works on config groups; {key!r} is not one (groups are folders under conf/).")
        out = value.filter(options)
    else:
        out = list(parsed.sweep_string_iterator())
    if not out:
        raise StudyError(f"{key}={expr} expands to no values: the grid would be empty. Give at least one value.")
    repeated = sorted({v for v in out if out.count(v) > 1})
    if repeated:
        raise StudyError(f"{key}={expr} lists {', '.join(repeated)} more than once: a repeated grid point would run "
                         "the same config twice and count as two seeds. List each value once (vary seed= for "
                         "repeats).")
    return out


def expand(spec: StudySpec) -> list[list[str]]:
    """Every trial's overrides (the study's fixed overrides first), in a stable order."""
    axes = [[f"{k}={v}" for v in values(k, e)] for k, e in spec.params.items()]
    return [[*spec.overrides, *combo] for combo in itertools.product(*axes)]
