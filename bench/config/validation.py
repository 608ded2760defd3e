"""Path-aware, collecting field readers for config files (:class:`Ctx`).

Every mistake of a file is reported at once: the readers of :class:`Ctx` record a mistake with the
dotted path of the field and return a harmless placeholder, so the parser goes on to find the
file's other mistakes; :func:`bench.config.load_config` then raises one :class:`ConfigError`
listing them all. A mistake inside a field that is already wrong is not reported again
(``mechanisms[0]`` not a mapping hides ``mechanisms[0].name`` missing).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, NoReturn, Sequence

from dpharness.bench.config.values import (
    REQUIRED,
    ConfigError,
    _coerce,
    _in_range,
    _one_of,
    _placeholder,
    _range_text,
    _show,
    _type_name,
    _wrong_type,
    did_you_mean,
)

__all__ = ["COMMON_KEYS", "ConfigError", "Ctx", "REQUIRED", "did_you_mean"]

#: Top-level keys every experiment config may use (read by :func:`bench.config.load_config`).
COMMON_KEYS = ("name", "experiment", "seed", "description", "quick")


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
        :func:`bench.run.tasks.data_rng`; task streams are derived by the runner.
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
