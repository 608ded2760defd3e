"""Config values: the error type, how a value is read as a type, and how a bad one is quoted.

:class:`ConfigError` carries every mistake of one file as ``(dotted path, message)`` pairs and
formats them ``<file>: <dotted.path>: <what is wrong and accepted>`` (the pyhf convention).
The helpers below turn a YAML value into the wanted type (PyYAML reads ``1e-3`` as a string; a
bool is never a number), state ranges in math notation and suggest the closest accepted word
(:func:`did_you_mean`, defined in :mod:`mechanisms.base` so the verifier core suggests the same way).
The field readers that use them live in :mod:`bench.config.validation` (:class:`~bench.config.validation.Ctx`).
"""

from __future__ import annotations

import math
import numbers
from typing import Any, Sequence

from dpharness.mechanisms.base import did_you_mean

__all__ = ["ConfigError", "REQUIRED", "did_you_mean"]


class ConfigError(ValueError):
    """A config mistake, or several mistakes of one file.

    The message is ``<file>: <dotted.path>: <what is wrong and accepted>`` for one mistake and
    ``<file>: N mistakes:`` followed by one indented ``<dotted.path>: <message>`` line each for
    several. ``errors`` lists them as ``(dotted path, message)`` pairs; an error raised from a plain
    message has one pair ``("", message)``. ``file`` is the config path (None for a plain message).
    """

    def __init__(self, message: str = "", *, errors: Sequence[tuple[str, str]] | None = None, file: str | None = None):
        self.file = file
        self.errors: list[tuple[str, str]] = list(errors) if errors is not None else [("", message)]
        super().__init__(message if errors is None else _format_errors(file or "<config>", self.errors))


def _format_errors(file: str, errors: Sequence[tuple[str, str]]) -> str:
    def line(p: str, m: str) -> str:
        return f"{p}: {m}" if p else m

    if len(errors) == 1:
        return f"{file}: {line(*errors[0])}"
    return f"{file}: {len(errors)} mistakes:\n" + "\n".join("  " + line(p, m) for p, m in errors)


class _Required:
    def __repr__(self) -> str:
        return "REQUIRED"


#: Sentinel default meaning "this key must be present".
REQUIRED: Any = _Required()

_TYPE_NAMES = {
    float: "a number",
    int: "an integer",
    str: "a string",
    bool: "true or false",
    list: "a list",
    dict: "a mapping",
    object: "a value",
}
# What a reader returns for a missing or wrong field without default (nothing runs with mistakes;
# the placeholder only lets the parser go on to find the file's other mistakes).
_PLACEHOLDERS = {float: 1.0, int: 1, str: "", bool: False, list: [], dict: {}, object: None}


def _type_name(t: Any) -> str:
    if isinstance(t, tuple):
        return " or ".join(_type_name(x) for x in t)
    return _TYPE_NAMES.get(t, getattr(t, "__name__", str(t)))


def _placeholder(t: Any) -> Any:
    t = t[0] if isinstance(t, tuple) else t
    v = _PLACEHOLDERS.get(t)
    return type(v)() if isinstance(v, (list, dict)) else v


def _show(v: Any) -> str:
    """How a bad value is quoted in a message: strings quoted, YAML spellings for bool/None."""
    if v is None:
        return "null (empty)"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, dict):
        return "a mapping"
    if isinstance(v, list):
        r = _bounded_repr(v)
        return f"a list {r}" if len(r) < 60 else "a list"
    return _bounded_repr(v)


def _bounded_repr(v: Any) -> str:
    """``repr(v)`` cut to a few hundred characters, never building more: YAML anchors can expand a
    small file into a value whose full repr would take hours (a "billion laughs")."""
    import reprlib

    r = reprlib.Repr()
    r.maxlevel, r.maxlist, r.maxdict, r.maxstring, r.maxother = 3, 8, 8, 120, 120
    return r.repr(v)


def _fmt_num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() and abs(x) < 2**53 else repr(float(x))


def _is_number(v: Any) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, bool)


def _to_float(v: Any) -> float | None:
    """A real number or a numeric string (PyYAML reads ``1e-3`` as a string) as float, else None."""
    if _is_number(v) or isinstance(v, str):
        try:
            return float(v)
        except ValueError:
            return None
        except OverflowError:  # an int beyond float range
            return math.inf
    return None


def _coerce(v: Any, t: Any) -> tuple[bool, Any]:
    """Try to read ``v`` as type ``t``; return (ok, converted)."""
    if isinstance(t, tuple):
        for tt in t:
            ok, out = _coerce(v, tt)
            if ok:
                return True, out
        return False, None
    if t is object:
        return True, v
    if t is float or t is int:
        f = _to_float(v)
        if f is None or not math.isfinite(f):
            return False, None
        if t is float:
            return True, f
        if isinstance(v, numbers.Integral):
            return True, int(v)
        return (True, int(f)) if f.is_integer() else (False, None)
    if t is list:
        return (True, list(v)) if isinstance(v, list) else (False, None)
    return (True, v) if isinstance(v, t) else (False, None)


def _wrong_type(t: Any, v: Any) -> str:
    f = _to_float(v)
    if f is not None and not math.isfinite(f) and (t in (int, float) or (isinstance(t, tuple) and float in t)):
        return f"must be a finite number, got {_show(v)}"
    return f"must be {_type_name(t)}, got {_show(v)}"


def _in_range(lo: float | None, hi: float | None, lo_open: bool, hi_open: bool, integer: bool) -> float | int:
    """A value inside the range (the placeholder of a wrong number field)."""
    if lo is not None and hi is not None:
        v = (lo + hi) / 2 if (lo_open or hi_open) else lo
    elif lo is not None:
        v = lo + 1 if lo_open else lo
    elif hi is not None:
        v = hi - 1 if hi_open else hi
    else:
        v = 1
    return math.ceil(v) if integer else float(v)


def _range_text(lo: float | None, hi: float | None, lo_open: bool, hi_open: bool) -> str:
    if lo is not None and hi is not None:
        return f"in {'(' if lo_open else '['}{_fmt_num(lo)}, {_fmt_num(hi)}{')' if hi_open else ']'}"
    if lo is not None:
        return f"{'>' if lo_open else '>='} {_fmt_num(lo)}"
    return f"{'<' if hi_open else '<='} {_fmt_num(hi)}"  # type: ignore[arg-type]


def _one_of(v: Any, accepted: Sequence[Any]) -> bool:
    """``v in accepted`` without YAML's true == 1 == 1.0 confusion (a bool matches only a bool)."""
    try:
        return any(v == a and isinstance(v, bool) == isinstance(a, bool) for a in accepted)
    except TypeError:  # pragma: no cover - exotic comparisons
        return False
