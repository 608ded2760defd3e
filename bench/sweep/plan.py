"""A sweep's plan: its config (``experiment: sweep``) read into the library's catalogue and one
search audit per catalogue entry and pass (real-valued law, released doubles).

Each audit is an ordinary ``library:`` audit (:mod:`bench.audits.spec`): ``pairs: search`` with no
pair given, ``samples: [budget]`` (the calls of the search), ``expect: correct`` (the library's
claim), ``exact: false`` (no law of the library is known), ``float_events`` off in the ``real`` pass
and on in the ``floats`` pass; ``family_alpha`` is split evenly over every audit of the sweep, so
the chance that any correct function of the library is flagged is at most ``family_alpha``.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dpharness.bench.audits import spec as audit_spec
from dpharness.bench.audits.spec import AuditSet
from dpharness.bench.config import ConfigError
from dpharness.bench.config.validation import Ctx
from dpharness.bench.sweep import catalogue as cat

__all__ = ["SweepSpec", "PASSES", "KEYS", "parse", "catalogue_path", "digest", "raw_config", "DEFAULT_BUDGET",
           "DEFAULT_FAMILY_ALPHA"]

#: The two passes of every entry: the real-valued law (float events off) and the released doubles (on).
PASSES = ("real", "floats")
#: The keys of a sweep config besides the common ones (name, seed, description, quick).
KEYS = ("library", "budget", "family_alpha", "passes", "only", "release", "catalogue_digest")
#: Calls per search when neither the command nor the entry says otherwise.
DEFAULT_BUDGET = 20_000
#: The family-wise error of a whole sweep (both passes of every entry).
DEFAULT_FAMILY_ALPHA = 0.05


@dataclass(frozen=True)
class SweepSpec:
    """A sweep: the catalogue, its budget and passes, and the audits they expand to (``audits``:
    ids ``<entry id>.<pass>``; skipped entries have none)."""

    library: str
    catalogue: cat.Catalogue
    budget: int
    passes: tuple[str, ...]
    audits: AuditSet
    release: str
    only: tuple[str, ...] = ()
    file: str = "<config>"

    def entry(self, audit_id: str) -> cat.Entry:
        eid = audit_id.rsplit(".", 1)[0]
        return next(e for e in self.catalogue.entries if e.id == eid)

    def selected(self) -> list[cat.Entry]:
        """The entries the sweep reports (``only`` restricts them)."""
        return [e for e in self.catalogue.entries if _chosen(e, self.only)]


def _chosen(e: cat.Entry, only: tuple[str, ...]) -> bool:
    return not only or any(re.fullmatch(p.replace(".", r"\.").replace("*", ".*"), e.id) or p == e.api for p in only)


def catalogue_path(library: str, base_dir: Path | None = None) -> Path:
    """The catalogue a sweep's ``library:`` names: a shipped one (``diffprivlib``, ``opendp``,
    ``pydp``) or a YAML file (relative to the config's folder)."""
    shipped = cat.shipped()
    if library in shipped:
        return shipped[library]
    p = Path(library)
    if not p.is_absolute() and base_dir is not None and not p.exists():
        p = base_dir / p
    return p


def digest(path: Path) -> str:
    """First 12 hex digits of the catalogue file's SHA-256 (part of the run's config, so an edited
    catalogue starts a new run folder instead of resuming rows built from the old one)."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:12]


def raw_config(library: str, *, budget: int | None = None, seed: int = 0, family_alpha: float | None = None,
               only: list[str] | None = None, release: str = "", base_dir: Path | None = None) -> dict:
    """The config ``dpharness sweep LIBRARY`` runs (written to the run folder as config.yaml)."""
    path = catalogue_path(library, base_dir)
    c = cat.load(path)
    stem = c.library if library in cat.shipped() else Path(library).stem
    raw: dict[str, Any] = {"name": f"sweep_{stem}", "experiment": "sweep", "seed": int(seed),
                           "library": str(library if library in cat.shipped() else path),
                           "budget": int(budget or DEFAULT_BUDGET),
                           "family_alpha": float(family_alpha if family_alpha is not None else DEFAULT_FAMILY_ALPHA),
                           "release": release, "catalogue_digest": digest(path)}
    if only:
        raw["only"] = list(only)
    return raw


def _audit(e: cat.Entry, pass_: str, budget: int) -> dict:
    mech: dict[str, Any] = {"library": e.api, "params": dict(e.params), "adapter": dict(e.adapter)}
    if e.build != e.api:
        mech["build"] = e.build
    return {"id": f"{e.id}.{pass_}", "mechanism": mech, "expect": "correct", "pairs": "search",
            "samples": [int(e.budget or budget)], "exact": False, "generator": e.generator,
            "float_events": pass_ == "floats"}


def parse(raw: dict, ctx: Ctx) -> SweepSpec:
    """Read a sweep config (every mistake recorded in ``ctx`` with its key)."""
    ctx.reject_unknown(raw, KEYS)
    library = ctx.get(raw, "library", str)
    budget = int(ctx.number(raw, "budget", DEFAULT_BUDGET, lo=1000, integer=True))
    fam = float(ctx.number(raw, "family_alpha", DEFAULT_FAMILY_ALPHA, lo=0, hi=1, lo_open=True, hi_open=True))
    passes = ctx.get(raw, "passes", list, list(PASSES))
    bad = [p for p in passes if p not in PASSES]
    if bad or not passes:
        ctx.report("passes", f"must be a non-empty list of {', '.join(PASSES)}, got {passes!r}")
        passes = list(PASSES)
    only = tuple(str(o) for o in (ctx.get(raw, "only", list, []) or []))
    placeholder = cat.Catalogue(library="", written_for="", entries=(), path="")
    empty = AuditSet(audits=(), targets=(), alpha=fam)
    if not library:
        return SweepSpec("", placeholder, budget, tuple(passes), empty, "", only, ctx.file)
    path = catalogue_path(library, ctx.base_dir)
    if not path.is_file():
        ctx.report("library", f"names neither a shipped catalogue ({', '.join(cat.shipped())}) nor a catalogue file: "
                   f"{library!r}")
        return SweepSpec(library, placeholder, budget, tuple(passes), empty, "", only, ctx.file)
    try:
        c = cat.load(path)
    except ConfigError as exc:
        ctx.report("library", f"catalogue {path}: {exc}")
        return SweepSpec(library, placeholder, budget, tuple(passes), empty, "", only, ctx.file)
    given = raw.get("catalogue_digest")
    if given is not None and str(given) != digest(path):
        ctx.report("catalogue_digest", f"the catalogue {path} changed since this run was started ({given} -> "
                   f"{digest(path)}); start a new run")
    chosen = [e for e in c.entries if _chosen(e, only)]
    if only and not chosen:
        ctx.report("only", f"selects no entry of {path.name} (ids such as {', '.join(e.id for e in c.entries[:3])})")
    audits = [_audit(e, p, budget) for e in chosen if not e.skip for p in passes]
    sub = Ctx(file=ctx.file, base_dir=ctx.base_dir, seed=ctx.seed, errors=[])
    try:
        # keyed chunks of draws: one audit may be spread over the workers without changing its result
        aset = audit_spec.parse({"family_alpha": fam, "family_split": "audits", "parallel_draws": True,
                                 "audits": audits}, sub) if audits else empty
    except ConfigError as exc:
        ctx.report("library", f"catalogue {path.name}: {exc}")
        aset = empty
    return SweepSpec(library, c, budget, tuple(passes), aset, str(raw.get("release", "") or ""), only, ctx.file)
