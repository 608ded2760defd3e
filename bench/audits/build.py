"""Building the mechanism of an audit, and the costly up-front checks of an audit config.

:func:`check` is what ``dpharness validate`` and ``dpharness audit`` / ``run`` (before any run
folder exists) run on a parsed :class:`~bench.audits.spec.AuditSet`: it builds every mechanism
(so a bad parameter value is a config error naming ``audits[i].mechanism.<param>``), checks each
given pair against the mechanism's *declared* neighbour relation and probes that the mechanism
accepts both datasets, and builds the pair list of every search. Missing peer libraries are
reported once for the whole file, with the install hint.

``callable:`` mechanisms (the user's own code, format in :mod:`bench.audits.spec`) are imported by
:func:`resolve_callable` with the spec's ``import_paths`` first on ``sys.path`` -- in the process
that validates and in every worker that runs a task -- and built by :func:`build_callable`; what is
wrong with one (no such module or attribute, not callable, wrong signature, no claim, claim keys
next to an object that has its own) is a :class:`CallableError`, reported by :func:`check` as a
config error at ``audits[i].mechanism.callable`` (or the claim key at fault).
"""

from __future__ import annotations

import importlib
import inspect
import math
import re
import sys
import warnings
from typing import Any, Sequence

import numpy as np

from dpharness.mechanisms.base import ParamError

from dpharness.bench.config import ConfigError, Ctx
from dpharness.bench.values import did_you_mean

from dpharness.bench.audits import catalogue
from dpharness.bench.audits.catalogue import MechanismRef, as_ref
from dpharness.bench.audits.spec import CLAIM_KEYS, AuditSet, AuditSpec, errors_at_once

__all__ = ["build_mechanism", "given_pairs", "check", "MissingExtraError", "resolve_callable", "build_callable", "CallableError",
           "build_library"]


class CallableError(ValueError):
    """What is wrong with a ``callable:`` mechanism; ``key`` is the mechanism key at fault
    (``callable`` or a claim key such as ``epsilon``)."""

    def __init__(self, message: str, key: str = "callable") -> None:
        super().__init__(message)
        self.key = key


def _add_import_paths(paths: Sequence[str]) -> None:
    """Put ``paths`` first on ``sys.path`` in their order (a folder already on it stays where it is)."""
    for p in reversed([p for p in paths if p not in sys.path]):
        sys.path.insert(0, p)


def resolve_callable(target: str, paths: Sequence[str] = ()) -> Any:
    """Import ``"package.module:attr"`` (``attr`` may be dotted) with ``paths`` first on sys.path."""
    module_name, _, attr = target.partition(":")
    _add_import_paths(paths)
    importlib.invalidate_caches()  # a module written since the last import (tests, generated code)
    where = " and ".join(paths) if paths else "the working directory"
    try:
        obj = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        missing = exc.name or ""
        if missing and (module_name == missing or module_name.startswith(missing + ".")):
            raise CallableError(f"cannot import {module_name!r}: no module named {missing!r} (searched {where}, "
                                "then the installed packages)") from None
        raise CallableError(f"importing {module_name!r} failed: {exc}") from None
    except Exception as exc:  # the user's module raised while importing (syntax error, ...)
        raise CallableError(f"importing {module_name!r} failed: {type(exc).__name__}: {exc}") from None
    done = module_name
    for part in attr.split("."):
        if not hasattr(obj, part):
            names = sorted(n for n in dir(obj) if not n.startswith("_") and not inspect.ismodule(getattr(obj, n, None)))
            shown = ", ".join(names[:12]) + (", ..." if len(names) > 12 else "")
            raise CallableError(f"{done!r} has no attribute {part!r}{did_you_mean(part, names)}; its public names: "
                                f"{shown or 'none'}")
        obj = getattr(obj, part)
        done = f"{done}:{part}" if done == module_name else f"{done}.{part}"
    return obj


def _is_mechanism(obj: Any) -> bool:
    """An instance (not a class) with a ``claim`` and a callable ``sample``."""
    return not isinstance(obj, type) and hasattr(obj, "claim") and callable(getattr(obj, "sample", None))


def _binds(fn: Any, n: int) -> bool | None:
    """Whether ``fn`` can be called with ``n`` positional arguments (None: signature unknown)."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    try:
        sig.bind(*([None] * n))
    except TypeError:
        return False
    return True


def _signature(fn: Any) -> str:
    try:
        return f"{getattr(fn, '__name__', 'it')}{inspect.signature(fn)}"
    except (TypeError, ValueError):
        return repr(fn)


def _checked_mechanism(obj: Any, what: str) -> Any:
    from dpharness import mechanisms

    if not isinstance(obj.claim, mechanisms.PrivacyClaim):
        raise CallableError(f"{what} has a claim that is not a mechanisms.PrivacyClaim (got "
                            f"{type(obj.claim).__name__}); the verifier audits a PrivacyClaim")
    return obj


def build_callable(spec: dict, paths: Sequence[str] = ()) -> Any:
    """The mechanism of ``{callable: ..., ...claim}`` (see :mod:`bench.audits.spec`): a function is
    wrapped under the claim keys; an object with ``claim`` and ``sample`` (or what a zero-argument
    factory returns) is used as it is. Raises :class:`CallableError`."""
    from dpharness import verifiers

    target = spec["callable"]
    claim = {k: v for k, v in spec.items() if k != "callable"}
    obj = resolve_callable(target, paths)
    if _is_mechanism(obj):
        if claim:
            hint = " (float_events: of the audit itself, beside samples:, applies to any mechanism)" \
                if "float_events" in claim else ""
            raise CallableError(f"{target} is a mechanism object with its own claim ({obj.claim}); drop "
                                f"{', '.join(claim)} (or point callable: at a plain fn(data, size, rng) to audit "
                                f"another claim){hint}", key=next(iter(claim)))
        return _checked_mechanism(obj, target)
    if not callable(obj):
        raise CallableError(f"{target} is neither callable nor a mechanism (an object with claim and "
                            f"sample(data, size, rng)): got {type(obj).__name__} {obj!r:.60}")
    takes_three, takes_none = _binds(obj, 3), _binds(obj, 0)
    if not claim:
        if takes_none:  # a zero-argument factory of a mechanism
            try:
                made = obj()
            except Exception as exc:
                raise CallableError(f"calling {target}() to make the mechanism raised {type(exc).__name__}: "
                                    f"{exc}") from None
            if not _is_mechanism(made):
                raise CallableError(f"{target}() returned {type(made).__name__} {made!r:.60}, not a mechanism (an "
                                    "object with claim and sample(data, size, rng))")
            return _checked_mechanism(made, f"{target}()")
        if takes_three is False:
            raise CallableError(f"{target} has the wrong signature: {_signature(obj)}; expected fn(data, size, rng) "
                                "with the claim keys, or a mechanism object (or a zero-argument factory of one)")
        raise CallableError(f"{target} is a function fn(data, size, rng) but no claim is given: add epsilon: (and "
                            f"as needed {', '.join(k for k in CLAIM_KEYS if k != 'epsilon')}) to the mechanism",
                            key="epsilon")
    if takes_three is False:
        raise CallableError(f"{target} has the wrong signature: {_signature(obj)}; with the claim keys it must be "
                            "callable as fn(data, size, rng)")
    if "epsilon" not in claim:
        raise CallableError(f"is required to wrap {target} (the claimed epsilon, a number > 0)", key="epsilon")
    accepted = inspect.signature(verifiers.wrap).parameters
    for k in claim:
        if k not in accepted:
            raise CallableError(f"this dpharness's verifiers.wrap does not accept {k}= ; accepted: "
                                f"{', '.join(a for a in accepted if a != 'fn')}", key=k)
    kw = dict(claim)
    kw.setdefault("name", target)
    return verifiers.wrap(obj, **kw)


def _keywords(fn: Any) -> list[str]:
    """The keyword arguments ``fn`` names (a class: its constructor's), or [] if it cannot tell."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return []
    return [n for n, p in sig.parameters.items()
            if n != "self" and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]


def build_library(spec: dict) -> Any:
    """The mechanism of ``{library: "pkg.mod:Name", params: {...}, adapter: {...}}`` (see
    :mod:`bench.audits.spec`): the library's class or function built with ``params`` and adapted
    by :mod:`dpharness.adapters` with the ``adapter`` options. Raises :class:`CallableError`
    (key ``library``, ``params`` or ``adapter``); a library that is not installed raises
    :class:`dpharness.adapters.MissingLibrary`."""
    from dpharness import adapters as A

    target, params, options = spec["library"], dict(spec.get("params") or {}), dict(spec.get("adapter") or {})
    root = target.split(".", 1)[0].split(":", 1)[0]
    dist = {"pydp": "python-dp"}.get(root, root)
    A.require(target.split(":", 1)[0], dist)  # MissingLibrary (the peers extra) before anything else
    try:
        obj = resolve_callable(target)
    except CallableError as exc:
        raise CallableError(str(exc), key="library") from None

    def call(what: str, fn: Any, *args: Any, **kw: Any) -> Any:
        try:
            with warnings.catch_warnings():  # the libraries warn per call (e.g. PrivacyLeakWarning): not ours
                warnings.simplefilter("ignore")
                return fn(*args, **kw)
        except A.MissingLibrary:
            raise
        except TypeError as exc:
            bad = re.search(r"unexpected keyword argument '(\w+)'", str(exc))
            if bad and bad.group(1) in kw:  # a name the callee does not take: the user's key at fault
                name = bad.group(1)
                group = "adapter" if name in options else "params"
                takes = _keywords(fn)[len(args):]  # an adapter's first parameter is the object passed in
                raise CallableError(f"is not an argument of {what}{did_you_mean(name, takes)}; accepted: "
                                    f"{', '.join(takes) or '?'}", key=f"{group}.{name}") from None
            raise CallableError(f"{what} raised TypeError: {str(exc).splitlines()[0]}",
                                key="params" if what == target else "adapter") from None
        except Exception as exc:  # ValueError, and the library's own (OpenDP raises OpenDPException)
            why = getattr(exc, "message", None) or str(exc).strip() or repr(exc)
            raise CallableError(f"{what} raised {type(exc).__name__}: {str(why).strip().splitlines()[0]}",
                                key="params") from None

    if root == "opendp":
        if not callable(obj):
            raise CallableError(f"{target} is not an OpenDP constructor (a function returning a Measurement)",
                                key="library")
        try:
            from opendp.mod import enable_features

            enable_features("contrib")
        except ImportError:
            pass
        made = call(target, obj, **params)
        return call("dpharness.adapters.opendp", A.opendp, made, **options)
    if root == "pydp":
        return call("dpharness.adapters.pydp", A.pydp, obj, **params, **options)
    # YAML has no tuples, and diffprivlib wants its bounds/ranges as (min, max) tuples
    params = {k: tuple(v) if isinstance(v, list) else v for k, v in params.items()}
    if isinstance(obj, type):  # diffprivlib mechanism or estimator
        made = call(target, obj, **params)
        if hasattr(made, "fit") and hasattr(made, "get_params"):
            return call("dpharness.adapters.diffprivlib_model", A.diffprivlib_model, made, **options)
        return call("dpharness.adapters.diffprivlib_mechanism", A.diffprivlib_mechanism, made, **options)
    if callable(obj) and getattr(obj, "__module__", "").startswith("diffprivlib.tools"):
        if "epsilon" not in params:
            raise CallableError(f"{target} is a diffprivlib tool: give epsilon: (and its other arguments, e.g. "
                                "bounds:) under params:", key="params")
        return call("dpharness.adapters.diffprivlib_tool", A.diffprivlib_tool, obj, **params, **options)
    raise CallableError(f"{target} is neither a class of diffprivlib (mechanism or estimator) nor a function of "
                        "diffprivlib.tools", key="library")


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


def _accepts(mech: Any, data: Any, user_code: bool = False) -> str | None:
    """None when ``mech`` samples once on ``data``, else why not (any exception of user code)."""
    caught = Exception if user_code else (ValueError, TypeError, IndexError)
    try:
        mech.sample(data, size=1, rng=0)
    except caught as exc:
        return f"{type(exc).__name__}: {exc}" if user_code else str(exc)
    return None


def _check_search_budget(a: AuditSpec, n_pairs: int, err: Any) -> None:
    """A search needs 4 selection calls per candidate pair (2 per dataset) and at least one
    certification draw: each sample size (the search's budget) is checked here, before any run
    folder exists, with the same split as :func:`verifiers.statistical.search`."""
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
    from dpharness.verifiers.neighbours import merge_swaps
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
        if a.pairs == "search":
            try:
                searched = pairs_for(mech, a.generator)
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
            try:
                check_pair(d1, d2, mech.claim)
            except (ValueError, TypeError) as exc:
                default = (", the default: the config gives no neighbours key"
                           if getattr(mech, "neighbours_defaulted", False) else "")
                err(a, f"pairs[{j}]", f"{exc} (the mechanism declares {mech.claim.neighbours} neighbours{default}"
                    + (f", sensitivity {mech.claim.sensitivity:g}" if mech.claim.sensitivity is not None else "")
                    + ")")
                continue
            for k, d in enumerate((d1, d2)):
                why = _accepts(mech, d, user_code=user)
                if why is not None:
                    err(a, f"pairs[{j}][{k}]", f"the mechanism rejects this dataset: {why}")
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
