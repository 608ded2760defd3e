"""Experiment configs: YAML -> validated frozen dataclasses, with errors that name the field.

A config is read with :func:`yaml.safe_load`. The keys common to every experiment are handled here:

``name``         run-folder name (letters, digits, ``_ . -``; default: the file's stem);
``experiment``   the kind, a module of :mod:`bench.experiments` (default ``median_accuracy``);
``seed``         root seed, an int >= 0 (default 0); ``--seed`` overrides it;
``description``  free text (not part of the config hash);
``quick``        a mapping of top-level overrides applied with ``--quick`` (the CI tier).

Everything else is parsed by the kind's ``parse(raw, ctx)``. Mistakes raise :class:`ConfigError`
whose message names the file, the dotted path of the field and what is accepted, e.g.
``configs/x.yaml: mechanisms[2].delta: must be in (0, 1), got 1.5`` (the pyhf convention). An error
in a value that came from the ``quick:`` section is reported at ``quick.<key>``.
"""

from __future__ import annotations

import argparse
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
    "read_yaml",
    "load_config",
    "config_hash",
    "cmd_validate",
]

COMMON_KEYS = ("name", "experiment", "seed", "description", "quick")
_NAME_RE = re.compile(r"^[A-Za-z0-9_.-]+$")


class ConfigError(ValueError):
    """A config mistake; the message is ``<file>: <dotted.path>: <what is wrong and accepted>``."""


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


def _type_name(t: Any) -> str:
    if isinstance(t, tuple):
        return " or ".join(_type_name(x) for x in t)
    return _TYPE_NAMES.get(t, getattr(t, "__name__", str(t)))


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
    if t is bool:
        return (True, v) if isinstance(v, bool) else (False, None)
    if t is float:
        if isinstance(v, numbers.Real) and not isinstance(v, bool):
            f = float(v)
            return (True, f) if math.isfinite(f) else (False, None)
        # PyYAML (YAML 1.1) reads 1e-3 as a string: accept numeric strings for numeric fields.
        if isinstance(v, str):
            try:
                f = float(v)
            except ValueError:
                return False, None
            return (True, f) if math.isfinite(f) else (False, None)
        return False, None
    if t is int:
        if isinstance(v, bool):
            return False, None
        if isinstance(v, numbers.Integral):
            return True, int(v)
        if isinstance(v, float) and v.is_integer():
            return True, int(v)
        if isinstance(v, str):
            ok, f = _coerce(v, float)
            if ok and float(f).is_integer():
                return True, int(f)
        return False, None
    if t is str:
        return (True, v) if isinstance(v, str) else (False, None)
    if t is list:
        return (True, list(v)) if isinstance(v, list) else (False, None)
    if t is dict:
        return (True, v) if isinstance(v, dict) else (False, None)
    return (True, v) if isinstance(v, t) else (False, None)


@dataclass(frozen=True)
class Ctx:
    """Path-aware validation context for one config file.

    ``prefix`` is the dotted path of the mapping being parsed (``ctx.at("mechanisms", 2)`` gives a
    child whose errors read ``mechanisms[2].<key>``). Every helper takes the mapping ``raw`` and a
    ``key`` in it; an optional ``path=`` gives the location of ``raw`` relative to ``prefix``.

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
    """

    file: str = "<config>"
    prefix: str = ""
    overrides: frozenset[str] = frozenset()
    base_dir: Path | None = None
    seed: int = 0

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

    def error(self, path: Any, msg: str) -> NoReturn:
        """Raise ``ConfigError(f"{file}: {prefix.path}: {msg}")``."""
        full = self.path(path) if not isinstance(path, (list, tuple)) else self.path(*path)
        top = re.split(r"[.\[]", full, maxsplit=1)[0] if full else ""
        if top and top in self.overrides:
            full = "quick." + full
        where = f"{full}: " if full else ""
        raise ConfigError(f"{self.file}: {where}{msg}")

    # -- mappings ------------------------------------------------------------------------------
    def require_mapping(self, raw: Any, path: Any = "") -> dict:
        """``raw`` itself must be a mapping with string keys."""
        if not isinstance(raw, dict):
            self.error(path, f"must be a mapping (key: value lines), got {_show(raw)}")
        for k in raw:
            if not isinstance(k, str):
                self.error(path, f"keys must be strings, got {_show(k)}")
        return raw

    def reject_unknown(self, raw: dict, allowed: Sequence[str], path: Any = "") -> None:
        """Raise on the first key of ``raw`` not in ``allowed``, listing the accepted keys."""
        self.require_mapping(raw, path)
        for k in raw:
            if k not in allowed:
                self.error(self._sub(path, k), f"unknown key; accepted: {', '.join(allowed)}")

    def _sub(self, path: Any, key: Any) -> str:
        rel = "" if path in (None, "") else str(path)
        if isinstance(key, int):
            return f"{rel}[{key}]"
        return f"{rel}.{key}" if rel else str(key)

    # -- typed fields ---------------------------------------------------------------------------
    def get(self, raw: dict, key: str, type_: Any = object, default: Any = REQUIRED, *, path: Any = "") -> Any:
        """``raw[key]`` checked to be of ``type_`` (a type or tuple of types), or ``default``.

        ``float`` accepts ints and numeric strings (PyYAML reads ``1e-3`` as a string); ``int``
        accepts integral floats; ``bool`` is never a number. Missing key with ``default=REQUIRED``
        is an error; an explicit ``null`` is treated as missing.
        """
        self.require_mapping(raw, path)
        p = self._sub(path, key)
        if key not in raw or raw[key] is None:
            if default is REQUIRED:
                self.error(p, f"is required ({_type_name(type_)})")
            return default
        ok, val = _coerce(raw[key], type_)
        if not ok:
            self.error(p, f"must be {_type_name(type_)}, got {_show(raw[key])}")
        return val

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
        """Check an already-read value is a number (an integer if ``integer``) inside the range.

        The message states the interval in math notation, e.g. ``must be in (0, 1), got 1.5``.
        """
        t = int if integer else float
        ok, v = _coerce(value, t)
        if not ok:
            self.error(path, f"must be {_type_name(t)}, got {_show(value)}")
        bad = (lo is not None and (v < lo or (lo_open and v == lo))) or (
            hi is not None and (v > hi or (hi_open and v == hi))
        )
        if bad:
            if lo is not None and hi is not None:
                rng = f"{'(' if lo_open else '['}{_fmt_num(lo)}, {_fmt_num(hi)}{')' if hi_open else ']'}"
                self.error(path, f"must be in {rng}, got {_show(value)}")
            if lo is not None:
                self.error(path, f"must be {'>' if lo_open else '>='} {_fmt_num(lo)}, got {_show(value)}")
            self.error(path, f"must be {'<' if hi_open else '<='} {_fmt_num(hi)}, got {_show(value)}")  # type: ignore[arg-type]
        return v

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
        """A number field with an optional range; ``default`` is returned unchecked when absent."""
        self.require_mapping(raw, path)
        if key not in raw or raw[key] is None:
            if default is REQUIRED:
                self.error(self._sub(path, key), f"is required ({_type_name(int if integer else float)})")
            return default
        return self.check_number(
            raw[key], self._sub(path, key), lo=lo, hi=hi, lo_open=lo_open, hi_open=hi_open, integer=integer
        )

    def choice(self, raw: dict, key: str, accepted: Sequence[Any], default: Any = REQUIRED, *, path: Any = "") -> Any:
        """A field that must be one of ``accepted``."""
        self.require_mapping(raw, path)
        if key not in raw or raw[key] is None:
            if default is REQUIRED:
                self.error(self._sub(path, key), f"is required; accepted: {', '.join(map(str, accepted))}")
            return default
        v = raw[key]
        if v not in accepted or isinstance(v, bool) != any(isinstance(a, bool) and a == v for a in accepted):
            self.error(self._sub(path, key), f"must be one of {', '.join(map(str, accepted))}; got {_show(v)}")
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
        (``epsilon[1]: must be > 0, got -1``). Duplicates are an error when ``unique``.
        """
        self.require_mapping(raw, path)
        p = self._sub(path, key)
        if key not in raw or raw[key] is None:
            if default is REQUIRED:
                self.error(p, f"is required ({_type_name(type_)} or a list of them)")
            return tuple(default) if isinstance(default, (list, tuple)) else (default,)
        v = raw[key]
        items = v if isinstance(v, list) else [v]
        if isinstance(v, list) and not v:
            self.error(p, "must not be an empty list")
        out = []
        for i, item in enumerate(items):
            ip = f"{p}[{i}]" if isinstance(v, list) else p
            if accepted is not None:
                if item not in accepted:
                    self.error(ip, f"must be one of {', '.join(map(str, accepted))}; got {_show(item)}")
                out.append(item)
                continue
            if type_ in (int, float):
                out.append(self.check_number(item, ip, lo=lo, hi=hi, lo_open=lo_open, hi_open=hi_open, integer=type_ is int))
            else:
                ok, val = _coerce(item, type_)
                if not ok:
                    self.error(ip, f"must be {_type_name(type_)}, got {_show(item)}")
                out.append(val)
        if unique:
            seen: set = set()
            for i, item in enumerate(out):
                h = json.dumps(item, sort_keys=True, default=str)
                if h in seen:
                    self.error(f"{p}[{i}]", f"duplicate value {_show(items[i])} in the grid")
                seen.add(h)
        return tuple(out)


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


def read_yaml(path: str | Path) -> dict:
    """``yaml.safe_load`` a config file; syntax errors become ConfigError with line/column."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigError(f"{path}: YAML syntax error: {where}{problem}") from None
    if raw is None:
        raise ConfigError(f"{path}: the file is empty; a config is a mapping with at least `mechanisms`")
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
    """Read, resolve and validate a config.

    Parameters
    ----------
    source
        A YAML path, an already-loaded mapping (shown as ``<dict>`` in messages) or a Config
        (re-resolved from its ``raw``).
    quick
        Apply the config's ``quick:`` overrides (shallow, top-level keys).
    seed
        Override the root seed.
    base_dir
        Folder that relative data paths are read from (default: the config file's folder; a run
        folder's config.yaml records the original one, see :func:`bench.results.load_run_config`).

    Raises
    ------
    ConfigError
        Naming the file and the dotted path of the first mistake.
    """
    if isinstance(source, Config):
        return load_config(dict(source.raw), quick=False, seed=seed, base_dir=source.base_dir) if seed is not None else source
    if isinstance(source, dict):
        raw, file, base = dict(source), "<dict>", None
        stem = None
    else:
        raw, file = read_yaml(source), str(source)
        base = Path(source).resolve().parent
        stem = Path(source).stem
    if base_dir is not None:
        base = Path(base_dir).resolve()
    ctx = Ctx(file=file, base_dir=base)
    ctx.require_mapping(raw)
    if "audits" in raw and "experiment" not in raw:  # an audit config keeps its format: kind `audit`
        # (bench/experiments/audit.py); the keys its quick: section caps are top-level (null = no cap)
        caps = [k for k in ("max_samples", "max_repeat") if isinstance(raw.get("quick"), dict) and k in raw["quick"]]
        raw = {"experiment": "audit", **{k: None for k in caps}, **raw}

    quick_raw = raw.get("quick")
    overrides: dict = {}
    if quick_raw is not None:
        ctx.require_mapping(quick_raw, "quick")
        for k in quick_raw:
            if k in ("name", "experiment", "quick"):
                ctx.error(f"quick.{k}", "cannot be overridden by quick:; accepted: any other top-level key")
        overrides = dict(quick_raw)
    if quick and not overrides:
        ctx.error("quick", "--quick was given but the config has no quick: section")

    resolved = {k: v for k, v in raw.items() if k != "quick"}
    if quick:
        for k, v in overrides.items():
            if k not in resolved:
                ctx.error(f"quick.{k}", f"overrides a key the config does not set; top-level keys: {', '.join(resolved)}")
            resolved[k] = v
        ctx = replace(ctx, overrides=frozenset(overrides))
    if seed is not None:
        if not isinstance(seed, numbers.Integral) or isinstance(seed, bool) or seed < 0:
            raise ConfigError(f"{file}: --seed must be an integer >= 0, got {seed!r}")
        resolved["seed"] = int(seed)

    name = ctx.get(resolved, "name", str, stem if stem is not None else REQUIRED)
    if not _NAME_RE.match(name):
        ctx.error("name", f"must use only letters, digits and _ . - (it names the run folder), got {name!r}")
    from . import experiments

    kind = ctx.get(resolved, "experiment", str, "median_accuracy")
    if kind not in experiments.available():
        ctx.error("experiment", f"unknown experiment kind {kind!r}; accepted: {', '.join(experiments.available())}")
    root_seed = ctx.number(resolved, "seed", 0, lo=0, integer=True)
    description = ctx.get(resolved, "description", str, "")
    resolved["name"], resolved["experiment"], resolved["seed"] = name, kind, root_seed

    module = experiments.get(kind)
    kind_raw = {k: v for k, v in resolved.items() if k not in COMMON_KEYS}
    spec = module.parse(kind_raw, replace(ctx, seed=root_seed))
    cfg = Config(
        name=name,
        experiment=kind,
        seed=root_seed,
        description=description,
        spec=spec,
        raw=resolved,
        source=file,
        quick=quick,
        hash=config_hash(resolved),
        base_dir=str(base) if base is not None else None,
    )
    if quick_raw is not None and not quick:
        # The quick tier must be valid too; check it now so CI does not discover it later.
        load_config(source, quick=True, seed=seed, base_dir=base_dir)
    return cfg


def cmd_validate(args: argparse.Namespace) -> int:
    """``dpharness validate CONFIG...``: parse every config (and its quick tier), build every
    mechanism and expand the tasks, without running anything. Exit 1 if any config is invalid."""
    from . import experiments

    bad = 0
    for path in args.configs:
        try:
            cfg = load_config(path)  # audit configs too (kind `audit`, selected by their `audits:` key)
            module = experiments.get(cfg.experiment)
            if hasattr(module, "check"):  # exactly the checks `run` makes before computing
                module.check(cfg.spec)
            n_tasks = len(module.tasks(cfg.spec))
            extra = ""
            if "quick" in read_yaml(path):
                qc = load_config(path, quick=True)
                extra = f", quick: {len(experiments.get(qc.experiment).tasks(qc.spec))} tasks"
            print(f"ok  {path}: {cfg.name} ({cfg.experiment}, {n_tasks} tasks{extra}, hash {cfg.hash})")
        except ConfigError as exc:
            bad += 1
            print(f"ERR {exc}", file=sys.stderr)
    return 1 if bad else 0
