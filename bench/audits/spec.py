"""Audit configs (``dpharness audit CONFIG``): the kind-specific keys, validated into frozen specs.

An audit config is selected by its top-level ``audits:`` key (no ``experiment:`` needed; the
common keys ``name``, ``seed``, ``description``, ``quick`` are read by :mod:`bench.config`)::

    name: audit_zoo            # run folder name (default: the file's stem)
    seed: 20240601             # root seed; --seed overrides it
    alpha: 0.05                # the error level of every audit (each audit may override it)
    family_alpha: 0.05         # or: one level for the whole config, split evenly (Bonferroni, by
                               #   verifiers.statistical.alpha.split_alpha) over its audit tasks
                               #   (audits x sample sizes x repeats of the tier that runs); not with alpha
    family_split: tasks        # what family_alpha is split over: tasks (default) or audits (each audit
                               #   gets family_alpha / #audits at every sample size and repeat)
    description: ...
    quick: {max_samples: 20000, max_repeat: 20}   # applied with --quick
    max_samples: 1000000       # optional caps (what quick: sets): sample sizes above are dropped
    max_repeat: 50             #   (the smallest one is kept) and repeats are cut
    audits: [...]
    targets: [...]             # optional: benchmark targets, reported as met / not met

One audit::

    - id: rnm_value_pair               # unique; letters, digits, _ . -
      mechanism: {name: zoo/rnm_laplace_value, epsilon: 1.0}
                 # name: names any mechanism of the catalogue (bench.audits.catalogue):
                 #   zoo/NAME, suite/SUITE/NAME, peer/NAME or a registered mechanism's plain NAME;
                 #   the older spellings stay accepted: {zoo: rnm_laplace_value, epsilon: 1.0}
                 # or {name: exponential, ...params} / {name: NAME, example: true} ({registry: NAME, ...})
                 # or {name: all} (one audit per registered mechanism, from example(); {registry: all})
                 # or {name: peer/diffprivlib_median, ...params} (bench.peers; {peer: ...})
                 # or {name: suite/dpsniper/NoisyHist2} (a peer suite's mechanism,
                 #   verifiers.suites; {suite: dpsniper/NoisyHist2})
                 # or {callable: "mypkg.mech:noisy_count", epsilon: 1.0, ...claim} (your own
                 #   fn(data, size, rng), wrapped with verifiers.wrap) or {callable: "mypkg.mech:MECH"}
                 #   (your own mechanism object, or a zero-argument factory of one); see below
                 # or {library: "diffprivlib.mechanisms:Laplace", params: {epsilon: 1, sensitivity: 1},
                 #   adapter: {float_events: false}} (a class or function of OpenDP, diffprivlib or
                 #   python-dp, built with params and audited through dpharness.adapters; see below)
      expect: broken                   # correct (default) | broken | calibration
      pairs: witness                   # witness (zoo) | search | suite | [[d1, d2], ...]
                                       #   suite: the suite's own input pairs, searched with one
                                       #   certification (samples = total calls, as for search)
      samples: [1500, 10000, 100000]   # per dataset (pairs given) or total budget (search)
      repeat: 1                        # seeds per sample size
      events: all                      # all | thresholds
      exact: true                      # exact loss of each pair (where the law is exposed)
      generator: auto                  # pair generator for search: auto | values | bits | scores | records | labels
      true_epsilon: 2.5                # optional; zoo mechanisms know theirs
      alpha: 0.05                      # optional override
      selection: 0.3                   # optional share of samples used to select the event
      sequential: false                # true: anytime-valid audit, stops at the first certified
                                       #   violation (verifiers.sequential; samples = the budget)
      float_events: true               # optional: events on the bits of released doubles on/off
                                       #   (default: the mechanism's own float_events)

A dataset of given ``pairs`` is a number (value/bit data), a list of records or scores (numbers,
labels; ``.nan`` is a record too and NaN records compare equal, ``-inf`` an excluded score, ``+inf``
is refused) or a list of rows (one record per inner list, all of one length): :mod:`bench.audits.datasets`.

Your own code (``callable:``). ``"package.module:attr"`` (``attr`` may be dotted, ``Class.method``)
names what to audit. The module is imported with two folders put first on ``sys.path``, in this
order: the directory the command was started in, then the config file's folder (recorded in the
spec, so loky workers of ``--jobs N`` import from the same places). Two forms:

* a plain ``fn(data, size, rng)`` with its claim: the keys of :data:`CALLABLE_KEYS` (``epsilon``
  required; ``delta``, ``neighbours``, ``kind``, ``sensitivity``, ``name``, ``attributes``,
  ``float_events`` and, where this version of :func:`verifiers.wrap` accepts them,
  ``input_domain`` / ``privacy_map`` / ``input_metric``) go to ``verifiers.wrap``;
* with ``callable:`` alone: an object that already has ``claim`` and ``sample(data, size, rng)``
  (a ``Mechanism``, a ``WrappedMechanism``, an adapter), or a zero-argument factory (a function or
  class callable with no arguments) that returns one; it is called once each time the mechanism is
  built (validation, and every task). Claim keys next to such an object are a config error: its
  claim is its own (to audit another claim, wrap its sampler in a function).

A released library's object (``library:``). ``"package.module:Name"`` names a class or function of
OpenDP, diffprivlib or python-dp (``pydp``); ``params`` are its arguments and ``adapter`` the options
of the adapter (:mod:`dpharness.adapters`), so the claim is the library's own and no code is
written: a diffprivlib mechanism or estimator class is instantiated with ``params`` and adapted; a
diffprivlib tool (``diffprivlib.tools:mean``) is adapted with ``params`` as its arguments
(``epsilon`` among them); a python-dp class is adapted with ``params`` as its constructor
arguments; an OpenDP constructor (``opendp.measurements:make_randomized_response_bool``) is called
with ``params`` (the ``contrib`` feature enabled) and the measurement adapted. A chain of OpenDP
constructors needs code: name a factory with ``callable:``.

Whether the target imports, exists, is callable with the right signature and has a claim is checked
by :func:`bench.audits.build.check` (``dpharness validate``, and before any run folder exists);
mistakes name ``audits[i].mechanism.callable`` or the claim key at fault.

``expect``: *correct* -- any violation fails the run (exit 1); *broken* -- a positive control that
must be flagged at its largest sample size in every repeat (a miss fails the run); *calibration*
-- a correct, tight control run many times: its false-violation count must stay within the
binomial bound Bin(repeat, alpha) at false-alarm 1e-6.

Targets (``targets:``): :mod:`bench.audits.targets`.

Validation is split in two: :func:`parse` checks everything that needs no mechanism (types,
ranges, names, parameter names, data values, the memory a sample size would need) and reports
*every* mistake of the file at once, into one :class:`AuditSet` (each mechanism a checked
:class:`~bench.audits.catalogue.MechanismRef`); :func:`bench.audits.build.check` builds each
mechanism and checks the given pairs against its declared neighbour relation, once per
:class:`AuditSet` (``dpharness audit`` checks before it prints anything, and the runner does not
check the same spec again). The tasks use that same spec.
"""

from __future__ import annotations

import math
import numbers
import os
import re
from dataclasses import dataclass, field
from typing import Any

from dpharness.adapters import TARGET_ROOTS
from dpharness.verifiers.statistical.alpha import split_alpha

from dpharness.bench.audits.catalogue import MECHANISM_KEYS, MechanismRef, parse_catalogued
from dpharness.bench.audits.catalogue import is_word as _is_word
from dpharness.bench.audits.datasets import parse_pairs
from dpharness.bench.audits.targets import TargetSpec, parse_target
from dpharness.bench.config import ConfigError, Ctx

__all__ = ["AuditSpec", "TargetSpec", "AuditSet", "MechanismRef", "parse", "KIND_KEYS", "MAX_SAMPLES", "MAX_REPEAT",
           "errors_at_once", "spread_draws", "CALLABLE_KEYS", "CLAIM_KEYS", "LIBRARY_KEYS", "LIBRARIES", "import_paths", "FAMILY_SPLITS"]

_ID = re.compile(r"^[A-Za-z0-9_.-]+$")
#: Top-level keys of an audit config besides the common ones (name, seed, description, quick).
KIND_KEYS = ("alpha", "family_alpha", "family_split", "audits", "targets", "max_samples", "max_repeat", "parallel_draws")
#: What ``family_alpha`` is split over: every audit task (audit x sample size x repeat), or every audit.
FAMILY_SPLITS = ("tasks", "audits")
AUDIT_KEYS = ("id", "mechanism", "expect", "pairs", "samples", "repeat", "events", "exact", "generator",
              "true_epsilon", "alpha", "selection", "sequential", "float_events")
def generators() -> tuple[str, ...]:
    """``auto`` and every generator family of the registered relations (read when a config is, so a
    relation module added later brings its own)."""
    from dpharness.verifiers.relations.registry import families

    return ("auto", *families())


def relations() -> tuple[str, ...]:
    """Every neighbour relation a claim may name: the registered relation modules."""
    from dpharness.verifiers.relations.registry import names

    return names()
#: The older keys naming a mechanism, one per kind (``name:`` is the one key for every catalogue entry).
MECHANISM_KINDS = MECHANISM_KEYS[1:]
#: Keys of ``mechanism: {library: ...}``, and the libraries whose objects it builds (top-level
#: module names; python-dp's is ``pydp``).
LIBRARY_KEYS = ("library", "build", "params", "adapter")
LIBRARIES = TARGET_ROOTS  # the adapters' one table of libraries (dpharness.adapters.LIBRARIES)
#: Keys of ``mechanism: {callable: ...}`` besides ``callable``: the claim and options of
#: :func:`verifiers.wrap` (``input_domain``, ``privacy_map``, ``input_metric`` are passed on only
#: where the installed ``wrap`` accepts them; :func:`bench.audits.build.check` says so otherwise).
CLAIM_KEYS = ("epsilon", "delta", "neighbours", "kind", "sensitivity", "name", "attributes", "float_events",
              "input_domain", "privacy_map", "input_metric")
CALLABLE_KEYS = ("callable", *CLAIM_KEYS)
#: ``package.module:attr`` (attr may be dotted): what ``callable:`` names.
_IMPORT_PATH = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$")
#: Largest sample size (draws per dataset, or total calls of a search) of one audit task. The
#: verifier holds every draw of a dataset in memory at once (8 bytes each, two datasets), so
#: 10^8 already needs 1.6 GB; larger budgets are repeats, not bigger tasks.
MAX_SAMPLES = 10**8
#: Largest ``repeat``: one task per repeat and sample size.
MAX_REPEAT = 100_000


@dataclass(frozen=True)
class AuditSpec:
    """One audit (a ``registry: all`` entry expands into one per mechanism, ids ``<id>.<name>``).
    ``index`` is the entry's position in ``audits:`` (error messages name ``audits[index]``)."""

    id: str
    #: The parsed ``mechanism:`` (it reads as the mapping of its kind's own spelling, e.g.
    #: ``{"zoo": "laplace", "epsilon": 1.0}``, whichever key the config used).
    mechanism: MechanismRef
    expect: str
    pairs: Any  # "witness" | "search" | "suite" | tuple of (d1, d2)
    samples: tuple[int, ...]
    repeat: int
    events: str
    exact: bool
    generator: str
    true_epsilon: float | None
    alpha: float
    selection: float | None
    index: int = 0
    sequential: bool = False
    #: ``float_events=`` of verifiers.audit / search (None: the mechanism's own default).
    float_events: bool | None = None
    #: Folders put first on ``sys.path`` before a ``callable:`` mechanism is imported (the working
    #: directory at parse time, then the config file's folder); empty for the other kinds.
    import_paths: tuple[str, ...] = ()
    #: ``jobs=`` / ``backend=`` / ``scheduler=`` of the verifier's draws (``parallel_draws: true``):
    #: None keeps the verifier's one stream per role; a number draws in keyed chunks, the same draws
    #: for any number (:mod:`verifiers.statistical.parallel`), spread by :func:`spread_draws`.
    draw_jobs: int | None = None
    draw_backend: str | None = None
    draw_scheduler: str | None = None

    @property
    def search(self) -> bool:
        """A search over pairs with one certification: generated pairs, or a suite's own pairs."""
        return self.pairs in ("search", "suite")


@dataclass(frozen=True)
class AuditSet:
    """The spec of the ``audit`` experiment kind: every audit and target of one config."""

    audits: tuple[AuditSpec, ...]
    targets: tuple[TargetSpec, ...]
    alpha: float
    file: str = "<config>"
    max_samples: int | None = None
    max_repeat: int | None = None
    #: Sample sizes dropped by ``max_samples`` (audit id -> sizes): targets on them are "not run".
    dropped: tuple[tuple[str, tuple[int, ...]], ...] = ()
    #: ``family_alpha`` of the config (None: each audit's own ``alpha``); ``alpha`` is then the share
    #: of each audit task (``family_split: tasks``) or of each audit (``audits``).
    family_alpha: float | None = None
    family_split: str | None = None
    #: ``parallel_draws: true``: every audit draws in keyed chunks, so :func:`spread_draws` may put
    #: the draws of one audit on several workers without changing a result.
    parallel_draws: bool = False
    #: Set by :func:`bench.audits.build.check` once every costly check of this spec passed, so that
    #: checking the same spec again (``dpharness audit`` checks before it prints, the runner before it
    #: creates the run folder) is free. Not part of the spec's value.
    checked: bool = field(default=False, init=False, compare=False, repr=False)

    def audit(self, audit_id: str) -> AuditSpec:
        return next(a for a in self.audits if a.id == audit_id)


def errors_at_once(file: str, messages: list[str]) -> ConfigError:
    """One ConfigError for several mistakes of one file: the first line names the file and the
    count, then one ``path: message`` line each."""
    if len(messages) == 1:
        return ConfigError(messages[0])
    prefix = f"{file}: "
    lines = [m[len(prefix):] if m.startswith(prefix) else m for m in messages]
    return ConfigError(f"{file}: {len(messages)} mistakes:\n  " + "\n  ".join(lines))


def _fmt_bytes(n: float) -> str:
    for unit, size in (("EB", 1e18), ("PB", 1e15), ("TB", 1e12), ("GB", 1e9), ("MB", 1e6)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{n / 1e3:.3g} kB"


def import_paths(base_dir: Any) -> tuple[str, ...]:
    """The folders a ``callable:`` is imported from, in order: the working directory, then the
    config file's folder (``base_dir``; None for a config given as a mapping)."""
    out = [os.getcwd()]
    if base_dir is not None and str(base_dir) not in out:
        out.append(str(base_dir))
    return tuple(out)


def _parse_callable(c: Ctx, raw: dict) -> dict:
    """``{callable: "pkg.mod:attr", ...claim}``: the import path's form and the claim keys' names,
    types and ranges; what the target is (function or mechanism) is checked by build.check."""
    from dpharness.mechanisms.contracts import OUTPUT_KINDS

    target = raw["callable"]
    if not isinstance(target, str) or not _IMPORT_PATH.match(target.strip()):
        c.report("mechanism.callable", f"must be an import path \"package.module:function\" (or "
                 f"\"package.module:OBJECT\"), got {target!r}")
    c.reject_unknown(raw, CALLABLE_KEYS, path="mechanism")
    out = dict(raw)
    # numbers as floats for wrap (PyYAML reads 1e-3 as text)
    if "epsilon" in raw:
        out["epsilon"] = float(c.number(raw, "epsilon", lo=0.0, lo_open=True, path="mechanism"))
    if "delta" in raw:
        out["delta"] = float(c.number(raw, "delta", lo=0.0, hi=1.0, hi_open=True, path="mechanism"))
    if "sensitivity" in raw and raw["sensitivity"] is not None:
        out["sensitivity"] = float(c.number(raw, "sensitivity", lo=0.0, lo_open=True, path="mechanism"))
    if "neighbours" in raw:
        c.choice(raw, "neighbours", relations(), path="mechanism")
    if "kind" in raw:
        c.choice(raw, "kind", OUTPUT_KINDS, path="mechanism")
    if "name" in raw:
        c.get(raw, "name", str, path="mechanism")
    if "float_events" in raw:
        c.get(raw, "float_events", bool, path="mechanism")
    if "attributes" in raw and not isinstance(raw["attributes"], dict):
        c.report("mechanism.attributes", f"must be a mapping of read-only attributes (e.g. {{lower: 0, upper: 1}}), "
                 f"got {raw['attributes']!r}")
    if isinstance(target, str):
        out["callable"] = target.strip()
    return out


def _parse_library(c: Ctx, raw: dict) -> dict:
    """``{library: "diffprivlib.mechanisms:Laplace", params: {...}, adapter: {...}}``: the import
    path's form and library, and two mappings; whether the target exists and builds, and whether
    the adapter takes the options, is checked by build.check (the library is imported there)."""
    target = raw["library"]
    c.reject_unknown(raw, LIBRARY_KEYS, path="mechanism")
    if not isinstance(target, str) or not _IMPORT_PATH.match(target.strip()):
        c.report("mechanism.library", f"must be an import path \"package.module:Name\" of a class or function of "
                 f"{', '.join(LIBRARIES)} (e.g. \"diffprivlib.mechanisms:Laplace\"), got {target!r}")
    elif target.strip().split(".", 1)[0].split(":", 1)[0] not in LIBRARIES:
        c.report("mechanism.library", f"names {target!r}, not a class or function of one of the libraries "
                 f"{', '.join(LIBRARIES)}; to audit your own code use callable:")
    out = {"library": target.strip() if isinstance(target, str) else target}
    build = raw.get("build")
    if build is not None:
        if not isinstance(build, str) or not _IMPORT_PATH.match(build.strip()):
            c.report("mechanism.build", f"must be the import path \"package.module:function\" of a factory returning "
                     f"the library's object, got {build!r}")
        else:
            out["build"] = build.strip()
    for key in ("params", "adapter"):
        v = raw.get(key, {})
        if v is None:
            v = {}
        if not isinstance(v, dict) or not all(isinstance(k, str) for k in v):
            c.report(f"mechanism.{key}", f"must be a mapping of keyword arguments, got {v!r}")
            v = {}
        v = dict(v)
        for k in ("epsilon", "delta"):  # PyYAML reads 1e-3 as text
            if isinstance(v.get(k), str) and not _is_word(v[k]):
                v[k] = float(v[k])
        out[key] = v
    both = sorted(set(out["params"]) & set(out["adapter"]))
    if both:
        c.report(f"mechanism.adapter.{both[0]}", "is given in both params: and adapter:; give it once")
    return out


def _parse_mechanism(c: Ctx, raw: Any) -> MechanismRef:
    """``mechanism:``: ``name:`` or exactly one of zoo/registry/peer/suite/callable/library, parsed
    into one :class:`MechanismRef` (catalogue names and parameters by
    :func:`~bench.audits.catalogue.parse_catalogued`; import paths here)."""
    if raw is None:
        c.error("mechanism", "is required: a mapping with one of name:, zoo:, registry:, peer:, suite:, callable:, "
                "library: and the parameters")
    c.require_mapping(raw, "mechanism")
    kinds = [k for k in MECHANISM_KINDS if k in raw]
    if not kinds and "name" in raw:  # the one key (with a kind's key, name is a parameter or claim key)
        kinds = ["name"]
    if len(kinds) != 1:
        c.error("mechanism", "must name exactly one of name:, zoo:, registry:, peer:, suite:, callable:, library:"
                + (f" (got {', '.join(kinds)})" if kinds else ""))
    kind = kinds[0]
    if kind == "callable":
        return MechanismRef(_parse_callable(c, raw))
    if kind == "library":
        return MechanismRef(_parse_library(c, raw))
    return parse_catalogued(c, raw, kind)


def _parse_samples(c: Ctx, raw: dict) -> tuple[int, ...]:
    v = raw.get("samples")
    items = v if isinstance(v, list) else [v]
    for i, s in enumerate(items):
        # Read the size first as a float: 1e14 must get the memory message, not a type error.
        if isinstance(s, (numbers.Real, str)) and not isinstance(s, bool):
            try:
                f = float(s)
            except ValueError:
                continue
            if math.isfinite(f) and f > MAX_SAMPLES:
                path = f"samples[{i}]" if isinstance(v, list) else "samples"
                c.error(path, f"too large: {f:.3g} draws per dataset need at least {_fmt_bytes(2 * 8 * f)} of "
                        f"memory for the outputs alone (8 bytes per draw, 2 datasets); the cap is {MAX_SAMPLES:,} "
                        "per task (use repeat: for more evidence)")
    return tuple(int(s) for s in c.grid(raw, "samples", int, lo=8))


def _parse_audit(c: Ctx, raw: Any, i: int, alpha: float, caps: tuple[int | None, int | None],
                 dropped: list[tuple[str, tuple[int, ...]]]) -> list[AuditSpec]:
    c.require_mapping(raw)
    c.reject_unknown(raw, AUDIT_KEYS)
    aid = c.get(raw, "id", str)
    if not _ID.match(aid):
        c.error("id", f"must use letters, digits, _ . - only (ASCII), got {aid!r}")
    mech = _parse_mechanism(c, raw.get("mechanism"))
    expect = c.choice(raw, "expect", ("correct", "broken", "calibration"), "correct")
    pairs = parse_pairs(c, raw.get("pairs", "suite" if mech.kind == "suite" else "witness"))
    if pairs == "witness" and mech.kind != "zoo":
        c.error("pairs", "witness pairs exist only for zoo mechanisms; use search, suite (suite mechanisms) "
                "or a list of pairs")
    if pairs == "suite" and mech.kind != "suite":
        c.error("pairs", "suite pairs exist only for suite mechanisms; use witness (zoo), search or a list of pairs")
    samples = _parse_samples(c, raw)
    repeat = int(c.number(raw, "repeat", 1, lo=1, hi=MAX_REPEAT, integer=True))
    max_samples, max_repeat = caps
    if max_samples is not None:
        kept = tuple(s for s in samples if s <= max_samples) or (min(samples),)
        if kept != samples:
            dropped.append((aid, tuple(s for s in samples if s not in kept)))
        samples = kept
    if max_repeat is not None:
        repeat = min(repeat, max_repeat)
    events = c.choice(raw, "events", ("all", "thresholds"), "all")
    exact = bool(c.get(raw, "exact", bool, True))
    generator = c.choice(raw, "generator", generators(), "auto")
    if generator != "auto" and pairs != "search":
        c.error("generator", "is used only with pairs: search")
    te = c.number(raw, "true_epsilon", None, lo=0.0)
    a = float(c.number(raw, "alpha", alpha, lo=0.0, hi=1.0, lo_open=True, hi_open=True))
    sel = c.number(raw, "selection", None, lo=0.0, hi=1.0, lo_open=True, hi_open=True)
    seq = bool(c.get(raw, "sequential", bool, False))
    fe = c.get(raw, "float_events", bool, None)
    base = dict(expect=expect, pairs=pairs, samples=samples, repeat=repeat, events=events, exact=exact,
                generator=generator, true_epsilon=None if te is None else float(te), alpha=a,
                selection=None if sel is None else float(sel), index=i, sequential=seq,
                float_events=None if fe is None else bool(fe))
    if mech.kind == "registry" and mech.name == "all":
        if pairs != "search":
            c.error("pairs", f"{mech.key}: all needs pairs: search (pairs come from each mechanism's generator)")
        from dpharness import mechanisms

        return [AuditSpec(id=f"{aid}.{name}", mechanism=MechanismRef({"registry": name, "example": True}, mech.key),
                          **base) for name in mechanisms.available()]
    paths = import_paths(c.base_dir) if mech.kind == "callable" else ()
    return [AuditSpec(id=aid, mechanism=mech, import_paths=paths, **base)]


def _cap(ctx: Ctx, raw: dict, key: str, lo: int) -> int | None:
    v = ctx.number(raw, key, None, lo=lo, integer=True)
    return None if v is None else int(v)


def parse(raw: dict, ctx: Ctx) -> AuditSet:
    """Validate the audit keys of a config (common keys already removed); every mistake of the
    file is collected and raised as one :class:`ConfigError` (one ``path: message`` line each)."""
    errors: list[str] = []

    def attempt(fn: Any, *args: Any) -> Any:
        try:
            return fn(*args)
        except ConfigError as exc:
            errors.append(str(exc))
            return None

    for k in raw:
        if k not in KIND_KEYS:
            attempt(ctx.error, k, "unknown key; accepted: name, seed, description, quick, " + ", ".join(KIND_KEYS))
    alpha = attempt(lambda: float(ctx.number(raw, "alpha", 0.05, lo=0.0, hi=1.0, lo_open=True, hi_open=True)))
    family = attempt(lambda: ctx.number(raw, "family_alpha", None, lo=0.0, hi=1.0, lo_open=True, hi_open=True))
    if family is not None and "alpha" in raw:
        attempt(ctx.error, "family_alpha", "give the error level once: alpha (each audit's own level) or family_alpha "
                "(one level for the whole config, split by dpharness over its audit tasks), not both")
    split = attempt(ctx.choice, raw, "family_split", FAMILY_SPLITS, "tasks")
    if "family_split" in raw and family is None and "family_alpha" not in raw:
        attempt(ctx.error, "family_split", "says what family_alpha is split over: give family_alpha too")
    parallel = attempt(ctx.get, raw, "parallel_draws", bool, False)
    max_samples = attempt(_cap, ctx, raw, "max_samples", 8)
    max_repeat = attempt(_cap, ctx, raw, "max_repeat", 1)
    audits_raw = raw.get("audits")
    audits: list[AuditSpec] = []
    dropped: list[tuple[str, tuple[int, ...]]] = []
    if not isinstance(audits_raw, list) or not audits_raw:
        attempt(ctx.error, "audits", "is required: a non-empty list of audits")
        audits_raw = []
    for i, a in enumerate(audits_raw):
        got = attempt(_parse_audit, ctx.at("audits", i), a, i, alpha if alpha is not None else 0.05,
                      (max_samples, max_repeat), dropped)
        audits.extend(got or [])
    seen: set[str] = set()
    for a in audits:
        if a.id in seen:
            attempt(ctx.error, ("audits", a.index, "id"), f"duplicate audit id {a.id!r} (ids must be unique)")
        seen.add(a.id)
    targets_raw = raw.get("targets") or []
    if not isinstance(targets_raw, list):
        attempt(ctx.error, "targets", "must be a list of targets")
        targets_raw = []
    sizes = {a.id: set(a.samples) for a in audits}
    for aid, gone in dropped:
        sizes[aid] = sizes.get(aid, set()) | set(gone)
    targets = [attempt(parse_target, ctx.at("targets", i), t, sizes) for i, t in enumerate(targets_raw)]
    if errors:
        raise errors_at_once(ctx.file, errors)
    if family is not None:
        audits, alpha = _split_family(audits, audits_raw, float(family), split)
    if parallel:
        from dataclasses import replace

        audits = [replace(a, draw_jobs=1) for a in audits]
    return AuditSet(audits=tuple(audits), targets=tuple(t for t in targets if t is not None), alpha=float(alpha),
                    file=ctx.file, max_samples=max_samples, max_repeat=max_repeat, dropped=tuple(dropped),
                    family_alpha=None if family is None else float(family),
                    family_split=split if family is not None else None, parallel_draws=bool(parallel))


def spread_draws(aset: AuditSet, jobs: int, backend: str | None = None, scheduler: str | None = None) -> AuditSet:
    """``aset`` with each audit's draws on ``jobs`` workers of ``backend`` (a dask ``scheduler``):
    for a config with fewer tasks than workers, the workers share the draws of one audit instead of
    idling. Only for ``parallel_draws`` specs, whose chunked draws do not depend on ``jobs``; the
    others are returned as they are."""
    from dataclasses import replace

    if not aset.parallel_draws:
        return aset
    out = replace(aset, audits=tuple(replace(a, draw_jobs=int(jobs), draw_backend=backend, draw_scheduler=scheduler)
                                     for a in aset.audits))
    object.__setattr__(out, "checked", aset.checked)  # the same audits: checks passed stay passed
    return out


def _split_family(audits: list[AuditSpec], raw: list, family: float, split: str) -> tuple[list[AuditSpec], float]:
    """``family_alpha``: the audits without an ``alpha`` of their own share ``family`` evenly
    (Bonferroni, :func:`verifiers.statistical.alpha.split_alpha`), so that the chance of any false flag
    of a correct mechanism in the whole config is at most ``family`` -- however many audits, sample
    sizes or registered mechanisms (``registry: all``) it holds. ``split``: ``tasks`` -- each audit
    task (audit x sample size x repeat, of the tier that runs) is one test; ``audits`` -- each audit is
    one, at that level at every sample size and repeat. Audits with their own ``alpha`` keep it."""
    from dataclasses import replace

    members = [a for a in audits if not (isinstance(raw[a.index], dict) and "alpha" in raw[a.index])]
    tests = [len(a.samples) * a.repeat for a in members] if split == "tasks" else None
    each = split_alpha(family, len(members), tests)
    ids = {a.id for a in members}
    return [replace(a, alpha=each) if a.id in ids else a for a in audits], each
