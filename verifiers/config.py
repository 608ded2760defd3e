"""Audit configs (``dpharness audit CONFIG``): YAML -> validated frozen dataclasses.

Top level::

    name: audit_zoo            # run folder name (default: the file's stem)
    seed: 20240601             # root seed; --seed overrides it
    alpha: 0.05                # family-wise error of every audit (each audit may override it)
    description: ...
    quick: {max_samples: 20000, max_repeat: 20}   # applied with --quick
    audits: [...]
    targets: [...]             # optional: benchmark targets, reported as met / not met

One audit::

    - id: rnm_value_pair               # unique; letters, digits, _ . -
      mechanism: {zoo: rnm_laplace_value, epsilon: 1.0}
                 # or {registry: exponential, ...params} / {registry: NAME, example: true}
                 # or {registry: all} (one audit per registered mechanism, from example())
                 # or {peer: diffprivlib_median, ...params} (verifiers.peers)
      expect: broken                   # correct (default) | broken | calibration
      pairs: witness                   # witness (zoo) | search | [[d1, d2], ...]
      samples: [1500, 10000, 100000]   # per dataset (pairs given) or total budget (search)
      repeat: 1                        # seeds per sample size
      events: all                      # all | thresholds
      exact: true                      # exact loss of each pair (where the law is exposed)
      generator: auto                  # pair generator for search
      true_epsilon: 2.5                # optional; zoo mechanisms know theirs
      alpha: 0.05                      # optional override

``expect``: *correct* -- any violation fails the run (exit 1); *broken* -- a positive control that
must be flagged at its largest sample size in every repeat (a miss fails the run); *calibration*
-- a correct, tight control run many times: its false-violation count must stay within the
binomial bound Bin(repeat, alpha) at false-alarm 1e-6.

One target::

    - {id: T2, text: "...", check: violated, audit: rnm_value_pair, samples: 1500,
       max_draws_per_dataset: 1500}

checks: ``violated`` (a share >= ``min_rate`` (default 1) of the repeats flagged; optional
``max_draws_per_dataset``),
``epsilon_lower_at_least`` (``value``; median over repeats), ``support_violation``
(with ``value`` = minimum epsilon_lower), ``false_violation_rate`` (``audits`` list, ``max``),
``calls_at_most`` (search audits: flagged with at most ``value`` calls), ``wall_time_at_most``
(whole run, seconds).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..bench.config import ConfigError, Ctx, config_hash, read_yaml

__all__ = ["AuditSpec", "TargetSpec", "AuditConfig", "load_audit_config", "ConfigError"]

_ID = re.compile(r"^[A-Za-z0-9_.-]+$")
TOP_KEYS = ("name", "seed", "alpha", "description", "quick", "audits", "targets")
AUDIT_KEYS = ("id", "mechanism", "expect", "pairs", "samples", "repeat", "events", "exact", "generator",
              "true_epsilon", "alpha", "selection")
QUICK_KEYS = ("max_samples", "max_repeat")
CHECKS = ("violated", "epsilon_lower_at_least", "support_violation", "false_violation_rate", "calls_at_most",
          "wall_time_at_most")
TARGET_KEYS = ("id", "text", "check", "audit", "audits", "samples", "value", "max", "max_draws_per_dataset",
               "min_rate")


@dataclass(frozen=True)
class AuditSpec:
    id: str
    mechanism: dict
    expect: str
    pairs: Any  # "witness" | "search" | list of (d1, d2)
    samples: tuple[int, ...]
    repeat: int
    events: str
    exact: bool
    generator: str
    true_epsilon: float | None
    alpha: float
    selection: float | None

    @property
    def search(self) -> bool:
        return self.pairs == "search"


@dataclass(frozen=True)
class TargetSpec:
    id: str
    text: str
    check: str
    audit: str | None = None
    audits: tuple[str, ...] = ()
    samples: int | None = None
    value: float | None = None
    max: float | None = None
    max_draws_per_dataset: int | None = None
    min_rate: float = 1.0


@dataclass(frozen=True)
class AuditConfig:
    name: str
    seed: int
    alpha: float
    description: str
    audits: tuple[AuditSpec, ...]
    targets: tuple[TargetSpec, ...]
    raw: dict = field(repr=False)
    source: str = "<config>"
    quick: bool = False
    hash: str = ""


def _expand_registry_all(spec: dict) -> list[tuple[str, dict]]:
    from .. import mechanisms

    out = []
    for name in mechanisms.available():
        out.append((name, {"registry": name, "example": True}))
    return out


def _parse_mechanism(ctx: Ctx, raw: Any, path: str) -> dict:
    ctx.require_mapping(raw, path)
    kinds = [k for k in ("zoo", "registry", "peer") if k in raw]
    if len(kinds) != 1:
        ctx.error(path, "must name exactly one of zoo:, registry:, peer:")
    kind = kinds[0]
    name = raw[kind]
    if not isinstance(name, str):
        ctx.error(f"{path}.{kind}", f"must be a name (text), got {name!r}")
    if kind == "zoo":
        from . import zoo

        if name not in zoo.available():
            ctx.error(f"{path}.zoo", f"unknown zoo mechanism {name!r}; accepted: {', '.join(zoo.available())}")
    if kind == "registry" and name != "all":
        from .. import mechanisms

        if name not in mechanisms.available():
            ctx.error(f"{path}.registry", f"unknown mechanism {name!r}; accepted: all, {', '.join(mechanisms.available())}")
    if kind == "peer":
        from . import peers

        if name not in peers.PEERS:
            ctx.error(f"{path}.peer", f"unknown peer mechanism {name!r}; accepted: {', '.join(peers.PEERS)}")
    return dict(raw)


def _parse_pairs(ctx: Ctx, raw: Any, path: str) -> Any:
    if raw in ("witness", "search"):
        return raw
    if not isinstance(raw, list) or not raw:
        ctx.error(path, f"must be witness, search or a non-empty list of [d1, d2] pairs, got {raw!r}")
    out = []
    for i, p in enumerate(raw):
        if not isinstance(p, list) or len(p) != 2:
            ctx.error(f"{path}[{i}]", f"must be a pair [d1, d2], got {p!r}")
        out.append((p[0], p[1]))
    return tuple(out)


def _parse_audit(ctx: Ctx, raw: Any, i: int, alpha: float, quick: dict | None) -> list[AuditSpec]:
    c = ctx.at("audits", i)
    c.reject_unknown(raw, AUDIT_KEYS)
    aid = c.get(raw, "id", str)
    if not _ID.match(aid):
        c.error("id", f"must use letters, digits, _ . - only, got {aid!r}")
    mech = _parse_mechanism(c, raw.get("mechanism"), "mechanism")
    expect = c.choice(raw, "expect", ("correct", "broken", "calibration"), "correct")
    pairs = _parse_pairs(c, raw.get("pairs", "witness"), "pairs")
    if pairs == "witness" and "zoo" not in mech:
        c.error("pairs", "witness pairs exist only for zoo mechanisms; use search or a list of pairs")
    samples = c.grid(raw, "samples", int, lo=8)
    repeat = int(c.number(raw, "repeat", 1, lo=1, integer=True))
    if quick:
        if quick.get("max_samples") is not None:
            kept = tuple(s for s in samples if s <= quick["max_samples"])
            samples = kept or (min(samples),)
        if quick.get("max_repeat") is not None:
            repeat = min(repeat, int(quick["max_repeat"]))
    events = c.choice(raw, "events", ("all", "thresholds"), "all")
    exact = bool(c.get(raw, "exact", bool, True))
    generator = c.get(raw, "generator", str, "auto")
    te = c.number(raw, "true_epsilon", None, lo=0.0)
    a = float(c.number(raw, "alpha", alpha, lo=0.0, hi=1.0, lo_open=True, hi_open=True))
    sel = c.number(raw, "selection", None, lo=0.0, hi=1.0, lo_open=True, hi_open=True)
    base = dict(expect=expect, pairs=pairs, samples=tuple(int(s) for s in samples), repeat=repeat, events=events,
                exact=exact, generator=generator, true_epsilon=None if te is None else float(te), alpha=a,
                selection=None if sel is None else float(sel))
    if mech.get("registry") == "all":
        if pairs != "search":
            c.error("pairs", "registry: all needs pairs: search (pairs come from each mechanism's generator)")
        return [AuditSpec(id=f"{aid}.{name}", mechanism=m, **base) for name, m in _expand_registry_all(mech)]
    return [AuditSpec(id=aid, mechanism=mech, **base)]


def _parse_target(ctx: Ctx, raw: Any, i: int, ids: set[str]) -> TargetSpec:
    c = ctx.at("targets", i)
    c.reject_unknown(raw, TARGET_KEYS)
    tid = c.get(raw, "id", str)
    check = c.choice(raw, "check", CHECKS)
    audit = c.get(raw, "audit", str, None)
    audits = tuple(raw.get("audits") or ())
    for j, a in enumerate(((audit,) if audit else ()) + audits):
        if a not in ids:
            c.error("audit" if audit and j == 0 else f"audits[{j - (1 if audit else 0)}]",
                    f"unknown audit id {a!r}; accepted: {', '.join(sorted(ids))}")
    if check not in ("false_violation_rate", "wall_time_at_most") and audit is None:
        c.error("audit", f"is required for check {check}")
    samples = c.number(raw, "samples", None, lo=1, integer=True)
    value = c.number(raw, "value", None)
    mx = c.number(raw, "max", None)
    mdd = c.number(raw, "max_draws_per_dataset", None, lo=1, integer=True)
    min_rate = float(c.number(raw, "min_rate", 1.0, lo=0.0, hi=1.0))
    if check in ("epsilon_lower_at_least", "calls_at_most", "wall_time_at_most", "support_violation") and value is None:
        c.error("value", f"is required for check {check}")
    if check == "false_violation_rate" and (mx is None or not audits):
        c.error("max" if mx is None else "audits", "false_violation_rate needs audits: [...] and max:")
    return TargetSpec(id=tid, text=c.get(raw, "text", str, ""), check=check, audit=audit, audits=audits,
                      samples=None if samples is None else int(samples), value=None if value is None else float(value),
                      max=None if mx is None else float(mx), max_draws_per_dataset=None if mdd is None else int(mdd),
                      min_rate=min_rate)


def load_audit_config(source: str | Path | dict, *, quick: bool = False, seed: int | None = None) -> AuditConfig:
    """Read and validate an audit config; errors are ``ConfigError`` naming file and path."""
    if isinstance(source, dict):
        raw, fname, stem = dict(source), "<dict>", "audit"
    else:
        raw, fname, stem = read_yaml(source), str(source), Path(source).stem
    ctx = Ctx(file=fname)
    ctx.reject_unknown(raw, TOP_KEYS)
    q = raw.get("quick") or {}
    ctx.require_mapping(q, "quick")
    ctx.reject_unknown(q, QUICK_KEYS, "quick")
    name = ctx.get(raw, "name", str, stem)
    if not _ID.match(name):
        ctx.error("name", f"must use letters, digits, _ . - only, got {name!r}")
    root_seed = int(ctx.number(raw, "seed", 0, lo=0, integer=True)) if seed is None else int(seed)
    alpha = float(ctx.number(raw, "alpha", 0.05, lo=0.0, hi=1.0, lo_open=True, hi_open=True))
    audits_raw = raw.get("audits")
    if not isinstance(audits_raw, list) or not audits_raw:
        ctx.error("audits", "is required: a non-empty list of audits")
    audits: list[AuditSpec] = []
    for i, a in enumerate(audits_raw):
        audits.extend(_parse_audit(ctx, a, i, alpha, q if quick else None))
    ids = [a.id for a in audits]
    dup = {x for x in ids if ids.count(x) > 1}
    if dup:
        ctx.error("audits", f"duplicate audit id(s): {', '.join(sorted(dup))}")
    targets_raw = raw.get("targets") or []
    if not isinstance(targets_raw, list):
        ctx.error("targets", "must be a list")
    targets = tuple(_parse_target(ctx, t, i, set(ids)) for i, t in enumerate(targets_raw))
    resolved = {k: v for k, v in raw.items() if k != "quick"}
    resolved["seed"] = root_seed
    if quick:
        resolved["quick_applied"] = dict(q)
    return AuditConfig(name=name, seed=root_seed, alpha=alpha, description=str(raw.get("description", "")),
                       audits=tuple(audits), targets=targets, raw=resolved, source=fname, quick=quick,
                       hash=config_hash(resolved))
