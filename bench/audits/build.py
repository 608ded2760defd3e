"""Building the mechanism of an audit, and the costly up-front checks of an audit config.

:func:`check` is what ``dpharness validate`` and ``dpharness audit`` / ``run`` (before any run
folder exists) run on a parsed :class:`~bench.audits.spec.AuditSet`: it builds every mechanism
(so a bad parameter value is a config error naming ``audits[i].mechanism.<param>``), checks each
given pair against the mechanism's *declared* neighbour relation and probes that the mechanism
accepts both datasets, and builds the pair list of every search. Missing peer libraries are
reported once for the whole file, with the install hint.

``callable:`` mechanisms (the user's own code, format in :mod:`bench.audits.spec`) are imported by
:func:`resolve_callable` with the spec's ``import_paths`` first on ``sys.path`` -- in the process
that validates and in every worker that runs a task -- and built by :func:`build_callable`, both
through the one intake of user code, :mod:`dpharness.verifiers.intake`; what is wrong with one (no
such module or attribute, not callable, wrong signature, no claim, claim keys next to an object
that has its own) is a :class:`CallableError`, reported by :func:`check` as a config error at
``audits[i].mechanism.callable`` (or the claim key at fault).
"""

from __future__ import annotations

import functools
import math
import os
import sys
import threading
from typing import Any, Sequence

import numpy as np

from dpharness.mechanisms.base import ParamError

from dpharness.bench.config import ConfigError, Ctx

from dpharness.bench.audits import catalogue
from dpharness.bench.audits.catalogue import MechanismRef, as_ref
from dpharness.bench.audits.spec import AuditSet, AuditSpec, errors_at_once

__all__ = ["build_mechanism", "given_pairs", "check", "MissingExtraError", "resolve_callable", "build_callable", "CallableError",
           "build_library"]


class CallableError(ValueError):
    """What is wrong with a ``callable:`` mechanism; ``key`` is the mechanism key at fault
    (``callable`` or a claim key such as ``epsilon``)."""

    def __init__(self, message: str, key: str = "callable") -> None:
        super().__init__(message)
        self.key = key


def resolve_callable(target: str, paths: Sequence[str] = ()) -> Any:
    """Import ``"package.module:attr"`` (``attr`` may be dotted) with ``paths`` first on sys.path
    (:func:`dpharness.verifiers.intake.resolve_target`)."""
    from dpharness.verifiers.intake import IntakeError, resolve_target

    try:
        return resolve_target(target, paths)
    except IntakeError as exc:
        raise CallableError(str(exc), key=exc.key) from None


def build_callable(spec: dict, paths: Sequence[str] = ()) -> Any:
    """The mechanism of ``{callable: ..., ...claim}`` (see :mod:`bench.audits.spec`): a function is
    wrapped under the claim keys; an object with ``claim`` and ``sample`` (or what a zero-argument
    factory returns; a library object, adapted) is used as it is. The one intake,
    :func:`dpharness.verifiers.intake.intake` in its config mode. Raises :class:`CallableError`."""
    import dpharness.adapters  # noqa: F401  (registers the library objects' recogniser with the intake)
    from dpharness.verifiers.intake import IntakeError, intake

    claim = {k: v for k, v in spec.items() if k != "callable"}
    try:
        return intake(spec["callable"], strict=True, paths=paths, **claim)
    except IntakeError as exc:
        raise CallableError(str(exc), key=exc.key) from None
    except SystemExit as exc:  # a factory that exits would end dpharness with the user's status
        raise CallableError(f"{spec['callable']} called sys.exit({exc.code!r}) when built") from None


def build_library(spec: dict) -> Any:
    """The mechanism of ``{library: "pkg.mod:Name", params: {...}, adapter: {...}}`` (see
    :mod:`bench.audits.spec`), built by :func:`dpharness.adapters.from_target`. Raises
    :class:`CallableError` (key ``library``, ``params``, ``adapter`` or ``params.NAME`` /
    ``adapter.NAME``: the adapters' field at fault); a library that is not installed raises
    :class:`dpharness.adapters.MissingLibrary`."""
    from dpharness import adapters as A

    try:
        return A.from_target(spec["library"], spec.get("params") or {}, spec.get("adapter") or {},
                             build=spec.get("build"))
    except A.TargetError as exc:
        raise CallableError(str(exc), key=exc.field) from None


class MissingExtraError(ConfigError):
    """Every check of the config passed except that an optional extra (``extra``) is not installed."""

    def __init__(self, message: str, *, extra: str):
        super().__init__(message)
        self.extra = extra


def build_mechanism(spec: MechanismRef | dict, import_paths: Sequence[str] = ()) -> tuple[Any, str, float | None]:
    """(mechanism, display name, true epsilon or None) from the parsed ``mechanism:`` of an audit
    (:attr:`AuditSpec.mechanism`, or a mapping in a kind's own spelling); ``import_paths``: where a
    ``callable:`` is imported from, :attr:`AuditSpec.import_paths`. Catalogue mechanisms are built
    by :mod:`bench.audits.catalogue`, the user's code and released libraries' objects here."""
    ref = as_ref(spec)
    if ref.kind == "callable":
        m = build_callable(dict(ref), import_paths)
        true_eps = getattr(m, "true_epsilon", None)
        name = ref.get("name") or str(getattr(m, "name", "") or ref["callable"])
        return m, name, float(true_eps) if isinstance(true_eps, (int, float)) else None
    if ref.kind == "library":
        m = build_library(dict(ref))
        return m, str(getattr(m, "name", "") or ref["library"]), None
    return catalogue.build(ref)


def given_pairs(audit: AuditSpec, mech: Any) -> list[tuple[Any, Any, str]]:
    """(d1, d2, label) of an audit with given pairs (``witness``: the zoo mechanism's own)."""
    if audit.pairs == "witness":
        w = mech.witness()
        return [(w.d1, w.d2, "witness")]
    if audit.pairs == "suite":
        from dpharness.verifiers.controls import suites

        e = suites.get(audit.mechanism.name)
        return [(d1, d2, f"{e.name} pair {i}") for i, (d1, d2) in enumerate(e.pairs)]
    return [(np.asarray(d1), np.asarray(d2), f"pair {i}") for i, (d1, d2) in enumerate(audit.pairs)]


def _param_path(exc: Exception, params: dict) -> str:
    """``mechanism.<param>`` when the builder refused the value of a parameter the config gives
    (a :class:`~dpharness.mechanisms.base.ParamError` names it), else ``mechanism``."""
    field = exc.field if isinstance(exc, ParamError) else None
    return f"mechanism.{field}" if field in params else "mechanism"


#: Draws of the probe of user code on each checked dataset (a shape check needs more than one).
PROBE_DRAWS = 3
#: Seconds one probe call of user code (``callable:``, ``library:``) may take while a config is
#: checked (``validate``, and ``audit``/``run`` before a run folder exists): a call that sleeps or
#: loops forever is reported instead of hanging. The environment variable
#: ``DPHARNESS_CALL_TIMEOUT`` sets it (seconds; 0: no limit).
CALL_TIMEOUT = 5.0


def call_timeout() -> float:
    """``DPHARNESS_CALL_TIMEOUT`` as seconds >= 0 (a value that is not one is said once and ignored)."""
    return _call_timeout(os.environ.get("DPHARNESS_CALL_TIMEOUT"))


@functools.lru_cache(maxsize=8)
def _call_timeout(raw: str | None) -> float:
    if raw is None or raw.strip() == "":
        return CALL_TIMEOUT
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not (math.isfinite(value) and value >= 0):
        print(f"warning: DPHARNESS_CALL_TIMEOUT must be a number of seconds >= 0 (0: no limit), got {raw!r}; "
              f"using {CALL_TIMEOUT:g}", file=sys.stderr)
        return CALL_TIMEOUT
    return value


_HUNG = "did not return within"


class CallTimeout(BaseException):
    """A probe call of user code that did not return within :func:`call_timeout` seconds (a
    BaseException, so that no ``except Exception`` of a pair generator takes it for a refusal of
    one dataset and waits again on the next)."""


def _limit_calls(mech: Any, seconds: float) -> None:
    """Make every ``sample`` call of the checked ``mech`` (a fresh object, used only by the check)
    raise :class:`CallTimeout` after ``seconds``."""
    if seconds <= 0:
        return
    sample = mech.sample

    def limited(*args: Any, **kwargs: Any) -> Any:
        return _timed(lambda: sample(*args, **kwargs), seconds)

    try:
        object.__setattr__(mech, "sample", limited)
    except (AttributeError, TypeError):  # a mechanism with __slots__: its calls are not limited
        pass


def _timed(fn: Any, seconds: float) -> Any:
    """``fn()``, or :class:`CallTimeout` after ``seconds`` (0: no limit). The call runs in a daemon
    thread: Python cannot stop it, but it no longer holds the command, which exits normally."""
    if seconds <= 0:
        return fn()
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # re-raised in the caller's thread, SystemExit included
            box["error"] = exc

    t = threading.Thread(target=target, daemon=True, name="dpharness-probe")
    t.start()
    t.join(seconds)
    if t.is_alive():
        raise CallTimeout(seconds)
    if "error" in box:
        raise box["error"]
    return box.get("value")


def _accepts(mech: Any, data: Any, user_code: bool = False) -> str | None:
    """None when ``mech`` samples on ``data``, else why not (any exception of user code). User code
    is probed with :data:`PROBE_DRAWS` draws, so that one returning one value whatever ``size``, one
    value too few or ragged rows fails here and not after the run folder exists; each probe call of
    user code may take :func:`call_timeout` seconds."""
    caught = Exception if user_code else (ValueError, TypeError, IndexError)
    size = PROBE_DRAWS if user_code else 1
    try:
        mech.sample(data, size=size, rng=0)
    except CallTimeout as exc:
        return (f"one call sample(data, size={size}, rng) {_HUNG} {exc.args[0]:g} s "
                "(DPHARNESS_CALL_TIMEOUT sets the limit; 0: none)")
    except caught as exc:
        return f"{type(exc).__name__}: {exc}" if user_code else str(exc)
    except SystemExit as exc:  # user code that exits must not end validate/audit with its status
        return f"it called sys.exit({exc.code!r})"
    return None


def _check_search_budget(a: AuditSpec, n_pairs: int, err: Any) -> None:
    """A search needs 4 selection calls per candidate pair (2 per dataset) and at least one
    certification draw: each sample size (the search's budget) is checked here, before any run
    folder exists, with the same split as :func:`verifiers.search`."""
    from dpharness.verifiers.statistical.search import DEFAULT_SEARCH_SELECTION

    sel = DEFAULT_SEARCH_SELECTION if a.selection is None else float(a.selection)
    for i, budget in enumerate(a.samples):
        n_cert = int(budget * (1.0 - sel)) // 2
        if budget - 2 * n_cert < 4 * n_pairs or n_cert < 1:
            need = math.ceil(4 * n_pairs / sel) + 2
            path = f"samples[{i}]" if len(a.samples) > 1 else "samples"
            err(a, path, f"a budget of {budget} calls is too small to search {n_pairs} candidate pairs (selection "
                f"needs 4 calls per pair, at selection share {sel:g}); give at least {need}")


def check(aset: AuditSet) -> None:
    """Build every mechanism and check every pair; one :class:`ConfigError` listing every mistake.

    Once per spec object: a spec that passed (:attr:`AuditSet.checked`) is not checked again."""
    if aset.checked:
        return
    from dpharness.verifiers import pairs_for
    from dpharness.verifiers.claims import check_pair
    from dpharness.verifiers.relations import merge_swaps
    from dpharness.adapters import MissingLibrary
    from dpharness.bench.peers import INSTALL_HINT, PeerUnavailable

    errors: list[str] = []
    missing: list[tuple[AuditSpec, str]] = []

    def err(a: AuditSpec, path: str, msg: str) -> None:
        note = f" (in {a.id})" if a.id.split(".", 1)[0] != a.id and a.mechanism.kind == "registry" else ""
        try:
            Ctx(file=aset.file).at("audits", a.index).error(path, msg + note)
        except ConfigError as exc:
            errors.append(str(exc))

    for a in aset.audits:
        ref = a.mechanism
        params = ref.params
        # the user's code or a released library's: any exception it raises on data is reported
        user_key = ref.kind if ref.user_code else None
        user = user_key is not None
        try:
            mech, _, _ = build_mechanism(a.mechanism, a.import_paths)
        except (PeerUnavailable, MissingLibrary) as exc:
            missing.append((a, str(exc)))
            continue
        except CallableError as exc:
            err(a, f"mechanism.{exc.key}", str(exc))
            continue
        except (ValueError, TypeError) as exc:
            err(a, _param_path(exc, params), f"cannot build the mechanism: {exc}")
            continue
        if user:
            _limit_calls(mech, call_timeout())
        if a.pairs == "search":
            try:
                searched = pairs_for(mech, a.generator)
            except CallTimeout as exc:
                err(a, f"mechanism.{user_key}", f"{a.mechanism[user_key]}: one call sample(data, size, rng) on a generated "
                    f"dataset {_HUNG} {exc.args[0]:g} s (DPHARNESS_CALL_TIMEOUT sets the limit; 0: none)")
                continue
            except (ValueError, TypeError, AttributeError) as exc:
                if user and a.generator == "auto":  # no generator was chosen: the user's code is at fault
                    err(a, f"mechanism.{user_key}", f"{a.mechanism[user_key]} cannot be searched: no neighbouring "
                        f"pairs: {exc}")
                else:
                    err(a, "generator", f"no neighbouring pairs to search: {exc}")
                continue
            if user and searched:  # the user's code runs on the first searched pair, once per dataset
                p = searched[0]
                for d in (p.d1, p.d2):
                    why = _accepts(mech, d, user_code=True)
                    if why is not None:
                        err(a, f"mechanism.{user_key}", f"{a.mechanism[user_key]} fails on the first searched pair "
                            f"({p.label}; dataset {np.asarray(d).tolist()!r}): {why}")
                        break
            _check_search_budget(a, len(merge_swaps(searched)[0]), err)
            continue
        if a.pairs == "witness":
            continue
        if a.pairs == "suite":
            from dpharness.verifiers import Pair

            suite_pairs = [Pair(d1, d2, lab) for d1, d2, lab in given_pairs(a, mech)]
            _check_search_budget(a, len(merge_swaps(suite_pairs)[0]), err)
        for j, (d1, d2, _) in enumerate(given_pairs(a, mech)):
            labels = [k for k, d in enumerate((d1, d2)) if np.ndim(d) == 0 and np.asarray(d).dtype.kind in "US"]
            if labels and mech.claim.neighbours != "local":  # one label is the data of a local mechanism only
                k = labels[0]
                err(a, f"pairs[{j}][{k}]", f"is the text {str((d1, d2)[k])!r}: one label is the data of a mechanism on one label "
                    f"(local neighbours); this mechanism declares {mech.claim.neighbours} neighbours: give a number, "
                    "or a list of records or scores")
                continue
            try:
                check_pair(d1, d2, mech.claim)
            except (ValueError, TypeError) as exc:
                default = (", the default: the config gives no neighbours key"
                           if getattr(mech, "neighbours_defaulted", False) else "")
                err(a, f"pairs[{j}]", f"{exc} (the mechanism declares {mech.claim.neighbours} neighbours{default}"
                    + (f", sensitivity {mech.claim.sensitivity:g}" if mech.claim.sensitivity is not None else "")
                    + ")")
                continue
            hung = False
            for k, d in enumerate((d1, d2)):
                why = _accepts(mech, d, user_code=user)
                if why is not None and _HUNG in why:  # the code, not this dataset: said once, not per pair
                    err(a, f"mechanism.{user_key}", f"{a.mechanism[user_key]} on pairs[{j}][{k}]: {why}")
                    hung = True
                    break
                if why is not None:
                    err(a, f"pairs[{j}][{k}]", f"the mechanism rejects this dataset: {why}")
            if hung:
                break
    if missing:
        libs: list[str] = []
        for _, why in missing:
            lib = why.split(" ", 1)[0]
            if lib not in libs:
                libs.append(lib)
        first = missing[0][0]
        more = f" and {len(missing) - 1} more peer audit(s)" if len(missing) > 1 else ""
        key = first.mechanism.key
        msg = (f"{aset.file}: audits[{first.index}].mechanism.{key}{more}: peer libraries not usable: "
               f"{', '.join(libs)} ({missing[0][1].split(';', 1)[0]}); {INSTALL_HINT}")
        if not errors:
            # the file is otherwise valid: only an optional extra is missing (validate says so and
            # does not count the file as invalid; audit/run still refuse to start)
            raise MissingExtraError(msg, extra="peers")
        errors.append(msg)
    if errors:
        raise errors_at_once(aset.file, errors)
    object.__setattr__(aset, "checked", True)  # the spec is frozen; the mark is not part of its value
