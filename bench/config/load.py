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

This module loads configs (:func:`load_config`, re-exported by :mod:`bench.config`); the pieces it
is built from are its neighbours: :mod:`bench.config.values` (:class:`ConfigError`, ``REQUIRED``,
:func:`did_you_mean`), :mod:`bench.config.validation` (:class:`Ctx`, ``COMMON_KEYS``) and
:mod:`bench.config.yaml_io` (:func:`read_yaml`). The ``validate`` command is :mod:`bench.cli.validate`.
"""

from __future__ import annotations

import hashlib
import json
import math
import numbers
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from dpharness.bench.config.validation import COMMON_KEYS, Ctx, _inside
from dpharness.bench.config.values import REQUIRED, ConfigError, _fmt_num, did_you_mean
from dpharness.bench.config.yaml_io import read_yaml

__all__ = ["Config", "load_config", "config_hash"]

_NAME_RE = re.compile(r"^[A-Za-z0-9_.-]+$")
#: Top-level keys only audit configs have (an experiment config using one gets a pointer to `audit`).
_AUDIT_ONLY_KEYS = ("audits", "targets", "max_samples", "max_repeat")


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
        from dpharness.bench import experiments

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


def load_config(
    source: "str | Path | dict | Config",
    *,
    quick: bool = False,
    seed: int | None = None,
    base_dir: str | Path | None = None,
    raw: dict | None = None,
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
        folder's config.yaml records the original one, see :func:`bench.run.folders.load_run_config`).
    raw
        The mapping the caller already read from the YAML path ``source`` (:func:`read_yaml`): the
        file is then not read again.

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
        raw, file = read_yaml(source) if raw is None else raw, str(source)
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
    from dpharness.bench import experiments

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
            ctx.report("name", f"must use only letters, digits and _ . - (ASCII: a-z, A-Z, 0-9; it names the run "
                               f"folder, which other systems must read too), got {name!r}")
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
    except Exception:  # broad: a kind's parser may raise anything on a placeholder; re-raised unless explained
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
