"""A library's sweep catalogue: one entry per ε-claiming public function or class of a release,
saying how to build it with example parameters, the data it takes, the relation and claim the
library states and where it states them -- or why it cannot be audited (docs/sweep.md).

The catalogues shipped live beside this module (``<library>.yaml``); a user's own is any
YAML file of the same shape::

    library: diffprivlib            # one of dpharness.adapters.LIBRARIES (its root)
    written_for: "0.6.6"            # the release the entries were checked against
    functions:
      - api: "diffprivlib.tools:mean"          # the public name it covers ("pkg.mod:Name")
        params: {epsilon: 1.0, bounds: [0, 1]} # the library's own arguments
        adapter: {}                            # options of the adapter (neighbours, kind, ...)
        relation: replace_one                  # the relation the claim is held to
        states: "diffprivlib/tools/utils.py ..." # where the library states the claim and relation
      - api: "diffprivlib.mechanisms:Bingham"
        skip: "why it cannot be audited"

Optional keys of an entry: ``id`` (unique; default: ``api`` with ``:`` as ``.``), ``build``
(an import path of a factory ``f(**params)`` returning the library's object, for chains or objects
a single constructor does not make; default: ``api`` itself), ``budget`` (calls per search, instead
of the sweep's), ``generator`` (the pair generator, default ``auto``), ``note``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dpharness.bench.config import ConfigError
from dpharness.bench.config.validation import Ctx
from dpharness.bench.config.yaml_io import read_yaml

__all__ = ["Entry", "Catalogue", "load", "shipped", "SHIPPED_DIR"]

#: Where the shipped catalogues live (package data).
SHIPPED_DIR = Path(__file__).resolve().parent

_ENTRY_KEYS = ("api", "id", "build", "params", "adapter", "relation", "states", "budget", "generator", "skip", "note")
_TARGET = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")
_ID = re.compile(r"^[A-Za-z0-9_.\-]+$")


@dataclass(frozen=True)
class Entry:
    """One catalogue entry: a public name of the library and how it is audited (or why not)."""

    api: str
    id: str
    build: str
    params: dict = field(default_factory=dict)
    adapter: dict = field(default_factory=dict)
    relation: str = ""
    states: str = ""
    budget: int | None = None
    generator: str = "auto"
    skip: str = ""
    note: str = ""


@dataclass(frozen=True)
class Catalogue:
    """A library's entries, in file order; ``path`` is the file they came from."""

    library: str
    written_for: str
    entries: tuple[Entry, ...]
    path: str

    def covers(self) -> set[str]:
        """The public names the entries cover."""
        return {e.api for e in self.entries}


def _entry(raw: Any, ctx: Ctx) -> Entry | None:
    raw = ctx.require_mapping(raw)
    if not raw:
        return None
    ctx.reject_unknown(raw, _ENTRY_KEYS)
    api = ctx.get(raw, "api", str)
    if api and not _TARGET.match(api):
        ctx.report("api", f"must be an import path 'package.module:Name', got {api!r}")
    eid = ctx.get(raw, "id", str, api.replace(":", "."))
    if eid and not _ID.match(eid):
        ctx.report("id", f"may hold letters, digits and _ . - only (ASCII), got {eid!r}")
    build = ctx.get(raw, "build", str, api)
    if build and not _TARGET.match(build):
        ctx.report("build", f"must be an import path 'package.module:function', got {build!r}")
    skip = ctx.get(raw, "skip", str, "")
    relation = ctx.get(raw, "relation", str, "")
    states = ctx.get(raw, "states", str, "")
    if not skip:
        for k, v in (("relation", relation), ("states", states)):
            if not v:
                ctx.report(k, "is required for an entry that is audited (or give skip: with the reason)")
    budget = ctx.get(raw, "budget", int, None)
    if budget is not None and budget < 1000:
        ctx.report("budget", f"must be at least 1000 calls, got {budget}")
    return Entry(api=api, id=eid, build=build, params=dict(ctx.get(raw, "params", dict, {}) or {}),
                 adapter=dict(ctx.get(raw, "adapter", dict, {}) or {}), relation=relation, states=states,
                 budget=budget, generator=ctx.get(raw, "generator", str, "auto"), skip=skip,
                 note=ctx.get(raw, "note", str, ""))


def load(path: str | Path, raw: dict | None = None) -> Catalogue:
    """The catalogue of ``path`` (every mistake reported at once as a :class:`ConfigError` naming
    its key, e.g. ``functions[3].relation``)."""
    raw = read_yaml(path) if raw is None else raw
    ctx = Ctx(file=str(path), errors=[])
    ctx.reject_unknown(raw, ("library", "written_for", "functions"))
    library = ctx.get(raw, "library", str)
    written_for = str(raw.get("written_for", "") or "")
    items = raw.get("functions")
    if not isinstance(items, list) or not items:
        ctx.report("functions", "must be a non-empty list of entries (api: ..., params: ..., relation: ...)")
        items = []
    entries: list[Entry] = []
    seen: dict[str, int] = {}
    for i, item in enumerate(items):
        e = _entry(item, ctx.at("functions", i))
        if e is None:
            ctx.report(f"functions[{i}]", "is empty")
            continue
        if e.id in seen:
            ctx.report(f"functions[{i}].id", f"{e.id!r} is also the id of functions[{seen[e.id]}]; give each a unique id")
        seen.setdefault(e.id, i)
        if library and e.api and not e.api.startswith(library):
            ctx.report(f"functions[{i}].api", f"{e.api!r} is not a name of {library}")
        entries.append(e)
    if ctx.errors:
        raise ConfigError(errors=ctx.errors, file=str(path))
    return Catalogue(library=library, written_for=written_for, entries=tuple(entries), path=str(path))


def shipped() -> dict[str, Path]:
    """The catalogues shipped with dpharness, by library (``diffprivlib``, ``opendp``, ``pydp``)."""
    return {p.stem: p for p in sorted(SHIPPED_DIR.glob("*.yaml"))}
