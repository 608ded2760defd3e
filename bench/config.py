"""Experiment configs: YAML -> validated frozen dataclasses, with errors that name the field.

A config is read with a :class:`yaml.SafeLoader` that refuses duplicate keys. The keys common to
every experiment are handled here:

``name``         run-folder name (letters, digits, ``_ . -``; default: the file's stem);
``experiment``   the kind, a module of :mod:`bench.experiments` (default ``median_accuracy``; a
                 file with a top-level ``audits:`` list is kind ``audit``);
``seed``         root seed, an int >= 0 (default 0); ``--seed`` overrides it;
``description``  free text (not part of the config hash);
``quick``        a mapping of top-level overrides applied with ``--quick`` (the CI tier).

Everything else is parsed by the kind's ``parse(raw, ctx)``. Every mistake of a file is reported at
once: the field readers of :class:`Ctx` record a mistake and return a harmless placeholder, and
:func:`load_config` raises one :class:`ConfigError` listing them all, each with the dotted path of
the field and what is accepted, e.g. ``configs/x.yaml: mechanisms[2].delta: must be in (0, 1), got
1.5`` (the pyhf convention). A mistake inside a field that is already wrong is not reported again
(``mechanisms[0]`` not a mapping hides ``mechanisms[0].name`` missing). An error in a value that
came from the ``quick:`` section is reported at ``quick.<key>``; the quick tier is checked together
with the full config.
"""

from __future__ import annotations

import argparse
import difflib
import hashlib
import json
import math
import numbers
import re
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, NoReturn, Sequence

import yaml

__all__ = [
    "ConfigError",
    "Ctx",
    "Config",
    "REQUIRED",
    "COMMON_KEYS",
    "did_you_mean",
    "read_yaml",
    "load_config",
    "config_hash",
    "cmd_validate",
]

COMMON_KEYS = ("name", "experiment", "seed", "description", "quick")
_NAME_RE = re.compile(r"^[A-Za-z0-9_.-]+$")
#: Top-level keys only audit configs have (an experiment config using one gets a pointer to `audit`).
_AUDIT_ONLY_KEYS = ("audits", "targets", "max_samples", "max_repeat")


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
        return f"a list {v!r}" if len(repr(v)) < 60 else "a list"
    return repr(v)


def _fmt_num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() and abs(x) < 2**53 else repr(float(x))


def did_you_mean(word: Any, options: Sequence[Any]) -> str:
    """`` (did you mean 'x'?)`` for the closest of ``options`` to a misspelt ``word``, else ``""``."""
    by_lower = {str(o).lower(): str(o) for o in options}  # case slips first (Age for age)
    close = difflib.get_close_matches(str(word).lower(), list(by_lower), n=1, cutoff=0.6)
    return f" (did you mean {by_lower[close[0]]!r}?)" if close else ""


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


@dataclass(frozen=True)
class Ctx:
    """Path-aware validation context for one config file.

    ``prefix`` is the dotted path of the mapping being parsed (``ctx.at("mechanisms", 2)`` gives a
    child whose errors read ``mechanisms[2].<key>``). Every reader takes the mapping ``raw`` and a
    ``key`` in it; an optional ``path=`` gives the location of ``raw`` relative to ``prefix``.

    Two modes. With an ``errors`` list (what :func:`load_config` passes; children made by
    :meth:`at` share it) the readers (:meth:`get`, :meth:`number`, :meth:`choice`, :meth:`grid`,
    :meth:`check_number`, :meth:`require_mapping`, :meth:`reject_unknown`) and :meth:`report`
    record a mistake and go on, returning the default or an in-range placeholder; without one
    (``errors=None``, a standalone Ctx) they raise at once. :meth:`error` always raises (for a
    mistake the parser cannot go past); the ConfigError lists every mistake recorded so far.

    Attributes
    ----------
    file : str
        Shown at the start of every message (the path as given on the command line).
    prefix : str
        Dotted path of the current mapping ("" at top level).
    overrides : frozenset of str
        Top-level keys whose values came from the ``quick:`` section (errors say ``quick.<key>``).
    base_dir : pathlib.Path or None
        Folder of the config file; relative data paths (``csv:``) are resolved against it.
    seed : int
        The root seed (after ``--seed``). Kinds keep it in their spec for
        :func:`bench.tasks.data_rng`; task streams are derived by the runner.
    errors : list of (str, str) or None
        Mistakes recorded so far, ``(dotted path, message)``; None: raise at the first one.
    """

    file: str = "<config>"
    prefix: str = ""
    overrides: frozenset[str] = frozenset()
    base_dir: Path | None = None
    seed: int = 0
    errors: list[tuple[str, str]] | None = field(default=None, compare=False, repr=False)

    # -- paths and errors -------------------------------------------------------------------
    def path(self, *parts: Any) -> str:
        """Join ``prefix`` with ``parts`` (str keys -> ``.key``, ints -> ``[i]``; a str part may
        itself be a dotted path such as ``"data.n"`` or ``"[2].delta"``)."""
        out = self.prefix
        for p in parts:
            if p is None or p == "":
                continue
            if isinstance(p, int):
                out += f"[{p}]"
            elif str(p).startswith("[") or not out:
                out += str(p)
            else:
                out += "." + str(p)
        return out

    def at(self, *parts: Any) -> "Ctx":
        """A child context whose paths start at ``parts`` (e.g. ``ctx.at("mechanisms", 2)``)."""
        return replace(self, prefix=self.path(*parts))

    def _full(self, path: Any) -> str:
        full = self.path(*path) if isinstance(path, (list, tuple)) else self.path(path)
        top = re.split(r"[.\[]", full, maxsplit=1)[0] if full else ""
        return "quick." + full if top and top in self.overrides else full

    def failed(self, *paths: Any) -> bool:
        """Whether a mistake was recorded at or inside any of ``paths`` (relative to ``prefix``;
        no paths: anywhere in the file). Cross-field checks skip fields already reported."""
        if not self.errors:
            return False
        if not paths:
            return True
        return any(_inside(q, self._full(p)) for p in paths for q, _ in self.errors)

    def report(self, path: Any, msg: str) -> None:
        """Record the mistake ``msg`` at ``path`` and go on (raise at once for a standalone Ctx).

        A mistake at or inside a field that already has one is dropped: it is a consequence."""
        full = self._full(path)
        if self.errors is None:
            raise ConfigError(errors=[(full, msg)], file=self.file)
        if not any(_inside(full, q) for q, _ in self.errors):
            self.errors.append((full, msg))

    def error(self, path: Any, msg: str) -> NoReturn:
        """Record the mistake and raise one ConfigError listing every mistake recorded so far."""
        self.report(path, msg)
        raise ConfigError(errors=self.errors or [(self._full(path), msg)], file=self.file)

    def _bad(self, path: Any, msg: str, placeholder: Any) -> Any:
        self.report(path, msg)
        return placeholder

    def _sub(self, path: Any, key: Any) -> str:
        rel = "" if path in (None, "") else str(path)
        if isinstance(key, int):
            return f"{rel}[{key}]"
        return f"{rel}.{key}" if rel else str(key)

    # -- mappings ------------------------------------------------------------------------------
    def require_mapping(self, raw: Any, path: Any = "") -> dict:
        """``raw`` itself must be a mapping with string keys; returns it (``{}`` if it is not one)."""
        if not isinstance(raw, dict):
            return self._bad(path, f"must be a mapping (key: value lines), got {_show(raw)}", {})
        bad = [k for k in raw if not isinstance(k, str)]
        if bad:
            self.report(path, f"keys must be strings, got {_show(bad[0])}")
            return {k: v for k, v in raw.items() if isinstance(k, str)}
        return raw

    def reject_unknown(self, raw: dict, allowed: Sequence[str], path: Any = "") -> None:
        """Report every key of ``raw`` not in ``allowed``, with the closest accepted key (at the
        top level of a file the common keys, ``name``, ``seed``, ..., are accepted too)."""
        if self.prefix == "" and path in (None, ""):
            allowed = (*COMMON_KEYS, *[k for k in allowed if k not in COMMON_KEYS])
        for k in self.require_mapping(raw, path):
            if k not in allowed:
                self.report(self._sub(path, k), f"unknown key{did_you_mean(k, allowed)}; accepted: {', '.join(allowed)}")

    # -- typed fields ---------------------------------------------------------------------------
    def get(self, raw: dict, key: str, type_: Any = object, default: Any = REQUIRED, *, path: Any = "") -> Any:
        """``raw[key]`` checked to be of ``type_`` (a type or tuple of types), or ``default``.

        ``float`` accepts ints and numeric strings (PyYAML reads ``1e-3`` as a string) but not
        NaN or infinities; ``int`` accepts integral floats; ``bool`` is never a number. Missing
        key with ``default=REQUIRED`` is an error; an explicit ``null`` is treated as missing.
        """
        raw = self.require_mapping(raw, path)
        p = self._sub(path, key)
        fallback = _placeholder(type_) if default is REQUIRED else default
        if raw.get(key) is None:
            if default is REQUIRED:
                return self._bad(p, f"is required ({_type_name(type_)})", fallback)
            return default
        ok, val = _coerce(raw[key], type_)
        return val if ok else self._bad(p, _wrong_type(type_, raw[key]), fallback)

    def check_number(
        self,
        value: Any,
        path: Any,
        *,
        lo: float | None = None,
        hi: float | None = None,
        lo_open: bool = False,
        hi_open: bool = False,
        integer: bool = False,
    ) -> float | int:
        """Check an already-read value is a finite number (an integer if ``integer``) in the range.

        The message states the interval in math notation, e.g. ``must be in (0, 1), got 1.5``; a
        wrong value is recorded and an in-range placeholder returned.
        """
        ok, v = self._number_ok(value, path, lo, hi, lo_open, hi_open, integer)
        return v if ok else _in_range(lo, hi, lo_open, hi_open, integer)

    def _number_ok(self, value: Any, path: Any, lo: float | None, hi: float | None, lo_open: bool,
                   hi_open: bool, integer: bool) -> tuple[bool, Any]:
        t = int if integer else float
        ok, v = _coerce(value, t)
        if not ok:
            self.report(path, _wrong_type(t, value))
            return False, None
        if (lo is not None and (v < lo or (lo_open and v == lo))) or (hi is not None and (v > hi or (hi_open and v == hi))):
            self.report(path, f"must be {_range_text(lo, hi, lo_open, hi_open)}, got {_show(value)}")
            return False, None
        return True, v

    def number(
        self,
        raw: dict,
        key: str,
        default: Any = REQUIRED,
        *,
        lo: float | None = None,
        hi: float | None = None,
        lo_open: bool = False,
        hi_open: bool = False,
        integer: bool = False,
        path: Any = "",
    ) -> Any:
        """A number field with an optional range; ``default`` is returned unchecked when absent
        (and in place of a wrong value)."""
        raw = self.require_mapping(raw, path)
        p = self._sub(path, key)
        fallback = _in_range(lo, hi, lo_open, hi_open, integer) if default is REQUIRED else default
        if raw.get(key) is None:
            if default is REQUIRED:
                return self._bad(p, f"is required ({_type_name(int if integer else float)})", fallback)
            return default
        ok, v = self._number_ok(raw[key], p, lo, hi, lo_open, hi_open, integer)
        return v if ok else fallback

    def choice(self, raw: dict, key: str, accepted: Sequence[Any], default: Any = REQUIRED, *, path: Any = "") -> Any:
        """A field that must be one of ``accepted`` (a misspelling gets the closest one named)."""
        raw = self.require_mapping(raw, path)
        p = self._sub(path, key)
        fallback = accepted[0] if default is REQUIRED else default
        if raw.get(key) is None:
            if default is REQUIRED:
                return self._bad(p, f"is required; accepted: {', '.join(map(str, accepted))}", fallback)
            return default
        v = raw[key]
        if not _one_of(v, accepted):
            return self._bad(p, f"must be one of {', '.join(map(str, accepted))}; got {_show(v)}{did_you_mean(v, accepted)}", fallback)
        return v

    def grid(
        self,
        raw: dict,
        key: str,
        type_: Any = float,
        default: Any = REQUIRED,
        *,
        lo: float | None = None,
        hi: float | None = None,
        lo_open: bool = False,
        hi_open: bool = False,
        accepted: Sequence[Any] | None = None,
        unique: bool = True,
        path: Any = "",
    ) -> tuple:
        """A grid axis: a scalar or a non-empty list of them, returned as a tuple in config order.

        Each element is checked (type, range or ``accepted``) with its index in the path
        (``epsilon[1]: must be > 0, got -1``); wrong elements are left out. Duplicates are an
        error when ``unique``.
        """
        raw = self.require_mapping(raw, path)
        p = self._sub(path, key)
        if default is REQUIRED:
            fallback: tuple = (accepted[0],) if accepted else (
                _in_range(lo, hi, lo_open, hi_open, type_ is int) if type_ in (int, float) else _placeholder(type_),)
        else:
            fallback = tuple(default) if isinstance(default, (list, tuple)) else (default,)
        if raw.get(key) is None:
            if default is REQUIRED:
                return self._bad(p, f"is required ({_type_name(type_)} or a list of them)", fallback)
            return fallback
        v = raw[key]
        if isinstance(v, list) and not v:
            return self._bad(p, "must not be an empty list", fallback)
        items = v if isinstance(v, list) else [v]
        out, seen = [], set()
        for i, item in enumerate(items):
            ip = f"{p}[{i}]" if isinstance(v, list) else p
            if accepted is not None:
                ok, val = _one_of(item, accepted), item
                if not ok:
                    self.report(ip, f"must be one of {', '.join(map(str, accepted))}; got {_show(item)}{did_you_mean(item, accepted)}")
            elif type_ in (int, float):
                ok, val = self._number_ok(item, ip, lo, hi, lo_open, hi_open, type_ is int)
            else:
                ok, val = _coerce(item, type_)
                if not ok:
                    self.report(ip, _wrong_type(type_, item))
            if not ok:
                continue
            h = json.dumps(val, sort_keys=True, default=str)
            if unique and h in seen:
                self.report(ip, f"duplicate value {_show(item)} in the grid")
                continue
            seen.add(h)
            out.append(val)
        return tuple(out) if out else fallback


def _inside(path: str, parent: str) -> bool:
    """``path`` is ``parent`` or a field inside it (``a.b`` and ``a[0]`` are inside ``a``; every
    path is inside the root ``""``)."""
    return parent == "" or path == parent or (path.startswith(parent) and path[len(parent)] in ".[")


def _one_of(v: Any, accepted: Sequence[Any]) -> bool:
    """``v in accepted`` without YAML's true == 1 == 1.0 confusion (a bool matches only a bool)."""
    try:
        return any(v == a and isinstance(v, bool) == isinstance(a, bool) for a in accepted)
    except TypeError:  # pragma: no cover - exotic comparisons
        return False


@dataclass(frozen=True)
class Config:
    """A loaded, validated experiment config.

    ``raw`` is the resolved mapping that was parsed (``quick:`` overrides and ``--seed`` applied,
    ``quick`` removed): it is what a run folder's ``config.yaml`` holds, and ``hash`` is computed
    from it (``description`` excluded), so the same command gives the same hash.
    """

    name: str
    experiment: str
    seed: int
    description: str
    spec: Any
    raw: dict = field(repr=False)
    source: str = "<config>"
    quick: bool = False
    hash: str = ""
    base_dir: str | None = None

    @property
    def module(self) -> Any:
        from . import experiments

        return experiments.get(self.experiment)


def _canonical(obj: Any) -> Any:
    """JSON-able canonical form: mapping keys as text, numbers as their canonical text."""
    if isinstance(obj, dict):
        return {(_fmt_num(k) if isinstance(k, numbers.Real) and not isinstance(k, bool) else str(k)): _canonical(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_canonical(v) for v in obj]
    if isinstance(obj, numbers.Real) and not isinstance(obj, bool):
        f = float(obj)
        return _fmt_num(f) if math.isfinite(f) else str(f)
    return obj


def config_hash(raw: dict) -> str:
    """First 10 hex digits of SHA-256 over the canonical JSON of ``raw`` without ``description``.

    ``1`` and ``1.0`` hash alike; key order inside mappings does not matter; list order does.
    """
    body = {k: v for k, v in raw.items() if k != "description"}
    text = json.dumps(_canonical(body), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:10]


class _DuplicateKey(yaml.YAMLError):
    def __init__(self, key: Any, first: int, again: int):
        super().__init__(f"line {again}: duplicate key {key!r} (first set on line {first}); YAML would keep only "
                         f"the last value silently: remove one of them")


class _Loader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that refuses a key given twice in one mapping (PyYAML keeps the last)."""


def _construct_mapping(loader: _Loader, node: yaml.MappingNode, deep: bool = False) -> dict:
    first: dict[Any, int] = {}
    for key_node, _ in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":  # `<<: *anchor` entries may be overridden
            continue
        key = loader.construct_object(key_node, deep=True)
        try:
            line = first.setdefault(key, key_node.start_mark.line + 1)
        except TypeError:  # an unhashable key: SafeConstructor reports it below
            continue
        if line != key_node.start_mark.line + 1:
            raise _DuplicateKey(key, line, key_node.start_mark.line + 1)
    return yaml.SafeLoader.construct_mapping(loader, node, deep=deep)


_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def read_yaml(path: str | Path) -> dict:
    """Read a config file: a UTF-8 YAML mapping without duplicate keys.

    Every way of failing is a one-line ConfigError naming the file: missing file, a directory,
    unreadable, not UTF-8 (with the line of the first bad byte), YAML syntax (line and column),
    a duplicate key (both lines), empty, or not a mapping at the top level.
    """
    p = Path(path)
    if p.is_dir():
        inside = sorted(q.name for q in p.glob("*.yaml"))[:5]
        hint = f" (it holds {', '.join(inside)}{', ...' if len(inside) == 5 else ''})" if inside else ""
        raise ConfigError(f"{path}: is a directory, not a config file; give one YAML file{hint}")
    try:
        data = p.read_bytes()
    except FileNotFoundError:
        raise ConfigError(f"{path}: file not found") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise ConfigError(f"{path}: not UTF-8 text (byte 0x{data[exc.start]:02x} on line {line}); "
                          f"save the config as UTF-8") from None
    try:
        raw = yaml.load(text, Loader=_Loader)  # noqa: S506 - a SafeLoader subclass
    except _DuplicateKey as exc:
        raise ConfigError(f"{path}: {exc}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        if isinstance(exc, yaml.constructor.ConstructorError):  # e.g. a !!python/object tag
            raise ConfigError(f"{path}: unsupported YAML: {where}{problem} (configs are plain YAML, without tags)") from None
        raise ConfigError(f"{path}: YAML syntax error: {where}{problem}") from None
    if raw is None:
        raise ConfigError(f"{path}: the file is empty (or only comments); a config is a mapping of keys "
                          f"(name, experiment, seed, ... and the kind's own keys, see docs/configs.md)")
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: the top level must be a mapping (key: value lines), got {_show(raw)}")
    return raw


def load_config(
    source: "str | Path | dict | Config",
    *,
    quick: bool = False,
    seed: int | None = None,
    base_dir: str | Path | None = None,
) -> Config:
    """Read, resolve and validate a config; every mistake of the file is reported at once.

    Parameters
    ----------
    source
        A YAML path, an already-loaded mapping (shown as ``<dict>`` in messages) or a Config
        (re-resolved from its ``raw``).
    quick
        Apply the config's ``quick:`` overrides (shallow, top-level keys). Without it, the quick
        tier is checked too (its mistakes are reported at ``quick.<key>``).
    seed
        Override the root seed.
    base_dir
        Folder that relative data paths are read from (default: the config file's folder; a run
        folder's config.yaml records the original one, see :func:`bench.results.load_run_config`).

    Raises
    ------
    ConfigError
        Listing every mistake, each with the dotted path of the field (``.errors``).
    """
    if isinstance(source, Config):
        return load_config(dict(source.raw), quick=False, seed=seed, base_dir=source.base_dir) if seed is not None else source
    if isinstance(source, dict):
        raw, file, base, stem = dict(source), "<dict>", None, None
    else:
        raw, file = read_yaml(source), str(source)
        base, stem = Path(source).resolve().parent, Path(source).stem
    if base_dir is not None:
        base = Path(base_dir).resolve()
    if seed is not None and (not isinstance(seed, numbers.Integral) or isinstance(seed, bool) or seed < 0):
        raise ConfigError(f"{file}: --seed must be an integer >= 0, got {seed!r}")
    errors: list[tuple[str, str]] = []
    cfg = _resolve(raw, Ctx(file=file, base_dir=base, errors=errors), stem, quick, seed)
    if not quick and isinstance(raw.get("quick"), dict) and raw["quick"]:
        # The quick tier must be valid too; check it now so CI does not discover it later.
        more: list[tuple[str, str]] = []
        _resolve(raw, Ctx(file=file, base_dir=base, errors=more), stem, True, seed)
        errors += [e for e in more if not any(_inside(e[0], p) for p, _ in errors)]
    if errors or cfg is None:
        raise ConfigError(errors=errors or [("", "invalid config")], file=file)
    return cfg


def _resolve(raw: Any, ctx: Ctx, stem: str | None, quick: bool, seed: int | None) -> Config | None:
    """Parse one tier of a config with a collecting ``ctx``; None when mistakes were recorded."""
    from . import experiments

    try:
        raw = ctx.require_mapping(raw)
        if "audits" in raw and "experiment" not in raw:  # an audit config keeps its format: kind `audit`
            # (bench/experiments/audit.py); the keys its quick: section caps are top-level (null = no cap)
            caps = [k for k in ("max_samples", "max_repeat") if isinstance(raw.get("quick"), dict) and k in raw["quick"]]
            raw = {"experiment": "audit", **{k: None for k in caps}, **raw}
        overrides = {k: v for k, v in ctx.require_mapping(raw.get("quick", {}) or {}, "quick").items()}
        for k in ("name", "experiment", "quick"):
            if k in overrides:
                ctx.report(f"quick.{k}", "cannot be overridden by quick:; accepted: any other top-level key")
                del overrides[k]
        resolved = {k: v for k, v in raw.items() if k != "quick"}
        if quick:
            if not overrides:
                ctx.error("quick", "--quick was given but the config has no quick: overrides")
            for k, v in overrides.items():
                if k not in resolved:
                    ctx.report(f"quick.{k}", f"overrides a key the config does not set{did_you_mean(k, resolved)}; "
                                             f"top-level keys: {', '.join(resolved)}")
                resolved[k] = v
            ctx = replace(ctx, overrides=frozenset(overrides))
        if seed is not None:
            resolved["seed"] = int(seed)

        name = ctx.get(resolved, "name", str, stem if stem is not None else REQUIRED)
        if name and not _NAME_RE.match(name):
            ctx.report("name", f"must use only letters, digits and _ . - (it names the run folder), got {name!r}")
        kind = ctx.get(resolved, "experiment", str, "median_accuracy")
        if kind not in experiments.available():
            ctx.error("experiment", f"unknown experiment kind {kind!r}{did_you_mean(kind, experiments.available())}; "
                                    f"accepted: {', '.join(experiments.available())}")
        root_seed = ctx.number(resolved, "seed", 0, lo=0, integer=True)
        description = ctx.get(resolved, "description", str, "")
        resolved["name"], resolved["experiment"], resolved["seed"] = name, kind, root_seed
        module = experiments.get(kind)
        if kind != "audit":  # an audit config without (or with a misspelt) `audits:` list
            own = (*COMMON_KEYS, *getattr(module, "_KEYS", ()))
            audit_like = [k for k in resolved if k not in own and (k in _AUDIT_ONLY_KEYS or did_you_mean(k, ["audits"]))]
            for k in audit_like:
                ctx.report(k, f"is a key of audit configs{did_you_mean(k, ['audits']) if k != 'audits' else ''}, not "
                              f"of experiment: {kind}; an audit config has a top-level `audits:` list and no "
                              f"`experiment:` key, and runs with `dpharness audit`")
            if audit_like and "experiment" not in raw:  # the default kind's own mistakes would only confuse
                raise ConfigError(errors=ctx.errors or [], file=ctx.file)
        kind_raw = {k: v for k, v in resolved.items() if k not in COMMON_KEYS}
        spec = module.parse(kind_raw, replace(ctx, seed=root_seed))
    except ConfigError as exc:
        if not ctx.errors:  # raised outside ctx (e.g. a helper's own Ctx): keep its mistakes
            prefix = f"{ctx.file}: "
            ctx.errors.extend((p, m[len(prefix):] if not p and m.startswith(prefix) else m) for p, m in exc.errors)  # type: ignore[union-attr]
        return None
    except Exception:
        if ctx.errors:  # the parser tripped over the placeholder of a mistake already recorded
            return None
        raise
    if ctx.errors:
        return None
    return Config(
        name=name,
        experiment=kind,
        seed=root_seed,
        description=description,
        spec=spec,
        raw=resolved,
        source=ctx.file,
        quick=quick,
        hash=config_hash(resolved),
        base_dir=str(ctx.base_dir) if ctx.base_dir is not None else None,
    )


def cmd_validate(args: argparse.Namespace) -> int:
    """``dpharness validate CONFIG...``: run, for every config and its quick tier, exactly the
    checks ``run``/``audit`` make before computing (parse, then the kind's ``check(spec)``:
    building every mechanism, probing pairs) and expand the tasks, without running anything.
    Prints ``ok ...`` per valid file and every mistake of an invalid one; exit 2 if any is invalid."""
    bad = 0
    for path in args.configs:
        try:
            cfg = load_config(path)  # audit configs too (kind `audit`, selected by their `audits:` key)
            quick_raw = read_yaml(path).get("quick")
            tiers = [cfg] + ([load_config(path, quick=True)] if isinstance(quick_raw, dict) and quick_raw else [])
            counts = []
            for c in tiers:
                if hasattr(c.module, "check"):  # exactly the checks `run` makes before computing
                    c.module.check(c.spec)
                counts.append(len(c.module.tasks(c.spec)))
            extra = f", quick: {counts[1]} tasks" if len(counts) > 1 else ""
            print(f"ok  {path}: {cfg.name} ({cfg.experiment}, {counts[0]} tasks{extra}, hash {cfg.hash})")
        except ConfigError as exc:
            bad += 1
            print(f"error: {exc}", file=sys.stderr)
    return 2 if bad else 0
