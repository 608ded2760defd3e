"""One intake for the code users hand over to be audited: :func:`intake` turns it into a mechanism
the verifier audits (an object with ``claim``, a :class:`mechanisms.PrivacyClaim`, and
``sample(data, size, rng)``).

It accepts

* a mechanism instance (``mechanisms.make(...)``, a zoo entry, a :class:`verifiers.WrappedMechanism`,
  an adapted library object): returned as it is once its claim is checked;
* a plain function ``fn(data, size, rng)`` (or, in code, an object with only ``sample``): wrapped
  with :func:`verifiers.wrap` under the claim given as keyword arguments (:data:`CLAIM_KEYS`);
* a library object (an OpenDP measurement, a diffprivlib mechanism, tool or model ...): handed to
  the recogniser registered for its package (:func:`register_recogniser`; importing
  :mod:`dpharness.adapters` registers :func:`dpharness.adapters.adapt`), which builds the mechanism
  with the library's own claim. The recognisers live above the verifier core, which does not
  import them;
* a target ``"package.module:attr"``: imported (:func:`resolve_target`, ``paths`` first on
  ``sys.path``), then taken as any of the above.

Two callers promise different things about a claim next to code, hence two modes:

* in code (``strict=False``, ``dpharness.testing.assert_dp``): the claim given is the claim
  audited. A mechanism with its own claim is audited under it through a thin proxy
  (:class:`Reclaimed`) that keeps every other attribute, or returned as it is when the two agree;
  a class is refused (build an instance); errors are ``TypeError`` naming ``mechanism_or_fn``.
* in a config (``strict=True``, ``mechanism: {callable: ...}`` of ``dpharness audit``): the claim
  keys only ever wrap a function, so next to an object with its own claim they are an error; a
  function must take ``(data, size, rng)``; with no claim keys the target must be, or make as a
  zero-argument factory (a function or class), a mechanism. Errors are :class:`IntakeError` naming
  the target and, in ``key``, the config key at fault.
"""

from __future__ import annotations

import importlib
import inspect
import re
import sys
from collections.abc import Callable, Sequence
from typing import Any

from dpharness.mechanisms.base import PrivacyClaim, did_you_mean

__all__ = ["intake", "register_recogniser", "resolve_target", "IntakeError", "CLAIM_KEYS"]

#: The claim keyword arguments of :func:`intake` (also the claim keys of ``mechanism: {callable:
#: ...}``): what :func:`verifiers.wrap` takes besides the function.
CLAIM_KEYS = ("epsilon", "delta", "neighbours", "kind", "sensitivity", "name", "attributes", "float_events",
              "input_domain", "privacy_map", "input_metric")
#: The claim arguments that audit a mechanism in code under another claim (the others only wrap functions).
_RECLAIM_KEYS = ("epsilon", "delta", "neighbours", "kind", "sensitivity", "attributes")
#: ``package.module:attr`` (attr may be dotted): a target string.
_TARGET = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$")

#: (top-level package names, recogniser) in registration order.
_RECOGNISERS: list[tuple[tuple[str, ...], Callable[[Any], Any]]] = []


class IntakeError(ValueError):
    """What is wrong with a target or with the code it names; ``key`` is the argument (config key)
    at fault: ``callable`` for the target itself, else a claim key such as ``epsilon``."""

    def __init__(self, message: str, key: str = "callable") -> None:
        super().__init__(message)
        self.key = key


def register_recogniser(recognise: Callable[[Any], Any], *, packages: Sequence[str]) -> None:
    """Hand the objects defined in ``packages`` (top-level module names, e.g. ``"opendp"``) to
    ``recognise(obj)``, which returns the mechanism built from such an object (with its own claim).

    For the floors above the verifier core (``dpharness.adapters`` registers its ``adapt``); a
    recogniser registered again under the same name replaces the earlier one (a module reload)."""
    if not callable(recognise):
        raise TypeError(f"recognise must be callable as recognise(obj) -> mechanism, got {recognise!r}")
    names = tuple(packages)
    if not names or not all(isinstance(p, str) and p for p in names):
        raise ValueError(f"packages must name at least one top-level package, got {packages!r}")
    ident = (getattr(recognise, "__module__", None), getattr(recognise, "__qualname__", None))
    _RECOGNISERS[:] = [(p, r) for p, r in _RECOGNISERS
                       if (getattr(r, "__module__", None), getattr(r, "__qualname__", None)) != ident]
    _RECOGNISERS.append((names, recognise))


def _recognised(obj: Any) -> Any:
    """The mechanism a registered recogniser builds from ``obj``, or None when none claims it
    (classes never: their instances are what the libraries' adapters take)."""
    if not _RECOGNISERS or isinstance(obj, type):
        return None
    module = (getattr(obj, "__module__", None) if callable(obj) else None) or type(obj).__module__ or ""
    root = str(module).split(".")[0]
    for packages, recognise in _RECOGNISERS:
        if root in packages:
            return recognise(obj)
    return None


def _add_import_paths(paths: Sequence[str]) -> None:
    """Put ``paths`` first on ``sys.path`` in their order (a folder already on it stays where it is)."""
    for p in reversed([p for p in paths if p not in sys.path]):
        sys.path.insert(0, p)


def resolve_target(target: str, paths: Sequence[str] = ()) -> Any:
    """Import ``"package.module:attr"`` (``attr`` may be dotted) with ``paths`` first on sys.path;
    :class:`IntakeError` (key ``callable``) saying what is missing."""
    module_name, _, attr = target.partition(":")
    _add_import_paths(paths)
    importlib.invalidate_caches()  # a module written since the last import (tests, generated code)
    where = " and ".join(paths) if paths else "the working directory"
    try:
        obj = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        missing = exc.name or ""
        if missing and (module_name == missing or module_name.startswith(missing + ".")):
            raise IntakeError(f"cannot import {module_name!r}: no module named {missing!r} (searched {where}, "
                              "then the installed packages)") from None
        raise IntakeError(f"importing {module_name!r} failed: {exc}") from None
    except SystemExit as exc:  # a script's command-line handling run at import: not an exit of dpharness
        raise IntakeError(f"importing {module_name!r} called sys.exit({exc.code!r}): it runs as a script when "
                          "imported (put that code under `if __name__ == \"__main__\":`)") from None
    except Exception as exc:  # the user's module may raise anything while importing (syntax error, ...)
        raise IntakeError(f"importing {module_name!r} failed: {type(exc).__name__}: {exc}") from None
    done = module_name
    for part in attr.split("."):
        if not hasattr(obj, part):
            names = sorted(n for n in dir(obj) if not n.startswith("_") and not inspect.ismodule(getattr(obj, n, None)))
            shown = ", ".join(names[:12]) + (", ..." if len(names) > 12 else "")
            raise IntakeError(f"{done!r} has no attribute {part!r}{did_you_mean(part, names)}; its public names: "
                              f"{shown or 'none'}")
        obj = getattr(obj, part)
        done = f"{done}:{part}" if done == module_name else f"{done}.{part}"
    return obj


def _name_of(obj: Any) -> str:
    name = getattr(obj, "name", "") or getattr(obj, "__name__", "") or type(obj).__name__
    return str(name)


def _wrap(fn: Any, claim: dict) -> Any:
    """``verifiers.wrap(fn, **claim)``, looked up when called (so a patched ``wrap`` is the one
    used); a key this ``wrap`` does not take is an :class:`IntakeError` at that key."""
    from dpharness import verifiers

    accepted = inspect.signature(verifiers.wrap).parameters
    for k in claim:
        if k not in accepted:
            raise IntakeError(f"this dpharness's verifiers.wrap does not accept {k}= ; accepted: "
                              f"{', '.join(a for a in accepted if a != 'fn')}", key=k)
    return verifiers.wrap(fn, **claim)


def intake(mechanism_or_fn: Any, *, strict: bool = False, paths: Sequence[str] = (), **claim: Any) -> Any:
    """The mechanism to audit for ``mechanism_or_fn`` (see the module's docstring for what is
    accepted and for the two modes).

    Parameters
    ----------
    mechanism_or_fn
        A mechanism instance, a plain ``fn(data, size, rng)``, an object with only ``sample``
        (in code), a library object with a registered recogniser, or a ``"package.module:attr"``
        target (any string when ``strict``, else a string of that form).
    strict
        False: the claim given is the claim audited (code; ``assert_dp``). True: the claim keys
        only wrap a function (a config's ``callable:``).
    paths
        Folders put first on ``sys.path`` before a target is imported.
    **claim
        The claim and options of :func:`verifiers.wrap` (:data:`CLAIM_KEYS`: ``epsilon``,
        ``delta``, ``neighbours``, ``kind``, ``sensitivity``, ``name``, ``attributes``,
        ``float_events``, ``input_domain``, ``privacy_map``, ``input_metric``), in the order
        given (errors name the first key at fault). In code, ``epsilon``, ``delta``,
        ``neighbours``, ``kind``, ``sensitivity`` and ``attributes`` also re-claim a mechanism
        (None: the mechanism's own).
    """
    obj = mechanism_or_fn
    target = obj if isinstance(obj, str) and (strict or _TARGET.match(obj)) else None
    if target is not None:
        obj = resolve_target(target, paths)
    pm = claim.get("privacy_map")
    if isinstance(pm, str):  # a config names the map by import path, like the callable itself
        try:
            claim["privacy_map"] = resolve_target(pm, paths)
        except IntakeError as exc:
            raise IntakeError(str(exc), key="privacy_map") from None
        if not callable(claim["privacy_map"]):
            raise IntakeError(f"{pm} is not a function d_in -> epsilon (or (epsilon, delta))", key="privacy_map")
    if strict:
        return _in_config(obj, target if target is not None else _name_of(obj), dict(claim))
    return _in_code(obj, dict(claim), default_name=target)


# --------------------------------------------------------------------------------------------
# in code: the claim given is audited


class Reclaimed:
    """A mechanism's sampler audited under another claim (and optionally another ``kind`` or
    extra attributes); every other attribute is the mechanism's own."""

    def __init__(self, inner: Any, claim: Any, kind: str | None, attributes: dict | None) -> None:
        self.__dict__.update(_inner=inner, _claim=claim, _kind=kind, _attributes=dict(attributes or {}))

    @property
    def claim(self) -> Any:
        return self._claim

    @property
    def declared(self) -> Any:
        """The claim the mechanism itself declares."""
        return self._inner.claim

    @property
    def kind(self) -> str:
        return self._kind if self._kind is not None else getattr(self._inner, "kind", "real")

    def sample(self, data: Any, size: Any = None, rng: Any = None) -> Any:
        return self._inner.sample(data, size, rng)

    def __getattr__(self, item: str) -> Any:
        if item.startswith("__") or "_inner" not in self.__dict__:
            raise AttributeError(item)
        if item in self.__dict__["_attributes"]:
            return self.__dict__["_attributes"][item]
        return getattr(self.__dict__["_inner"], item)

    def __repr__(self) -> str:
        return f"{self._inner!r} audited as {self._claim}"


def _in_code(obj: Any, claim: dict, default_name: str | None) -> Any:
    if isinstance(obj, type):
        raise TypeError(f"mechanism_or_fn must be a mechanism instance or a function fn(data, size, rng), got the "
                        f"class {obj.__name__}; build an instance first")
    has_sample = callable(getattr(obj, "sample", None))
    if not has_sample:
        made = _recognised(obj)
        if made is not None:
            obj, has_sample = made, True
    own = getattr(obj, "claim", None) if has_sample else None
    if own is None:
        fn = obj.sample if has_sample else obj
        if not callable(fn):
            raise TypeError("mechanism_or_fn must be a mechanism (an object with `claim` and `sample(data, size, rng)`) "
                            f"or a function fn(data, size, rng); got {type(obj).__name__} {obj!r:.60}")
        if "kind" in claim:
            claim["kind"] = claim["kind"] or "real"
        claim["name"] = claim.get("name") or default_name or _name_of(obj)
        return _wrap(fn, claim)
    if not isinstance(own, PrivacyClaim):
        raise TypeError(f"mechanism.claim must be a mechanisms.PrivacyClaim, got {type(own).__name__}")
    return _reclaim(obj, own, claim)


def _reclaim(obj: Any, own: PrivacyClaim, claim: dict) -> Any:
    """``obj`` audited under ``claim``: itself when the claims agree, else a :class:`Reclaimed`."""
    if not any(k in claim for k in _RECLAIM_KEYS):
        return obj
    other = [k for k in claim if k not in _RECLAIM_KEYS and k != "name"]
    if other:
        raise TypeError(f"{', '.join(other)} apply to a function being wrapped, not to a mechanism with its own claim "
                        f"({own}); wrap its sampler (verifiers.wrap(mechanism.sample, ...)) to audit another claim")
    epsilon, delta = claim.get("epsilon", own.epsilon), claim.get("delta", own.delta)
    neighbours, kind, sensitivity, attributes = (claim.get(k) for k in ("neighbours", "kind", "sensitivity", "attributes"))
    rel = neighbours or own.neighbours
    unit = ({"unit_column": own.unit_column, "max_contributions": own.max_contributions}
            if rel == "privacy_unit" and own.neighbours == "privacy_unit" else {})
    for k in ("unit_column", "max_contributions"):
        if attributes and k in attributes:
            unit[k] = attributes[k]
    new = PrivacyClaim(epsilon, delta, neighbours=rel, sensitivity=own.sensitivity if sensitivity is None else sensitivity,
                       **unit)
    if new == own and (kind is None or kind == getattr(obj, "kind", "real")) and not attributes:
        return obj
    return Reclaimed(obj, new, kind, attributes)


# --------------------------------------------------------------------------------------------
# in a config: the claim keys only wrap a function


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
    if not isinstance(obj.claim, PrivacyClaim):
        raise IntakeError(f"{what} has a claim that is not a mechanisms.PrivacyClaim (got "
                          f"{type(obj.claim).__name__}); the verifier audits a PrivacyClaim")
    return obj


def _as_mechanism(obj: Any) -> Any:
    """``obj``, or the mechanism a recogniser builds from it (a library object)."""
    if _is_mechanism(obj):
        return obj
    made = _recognised(obj)
    return obj if made is None else made


def _in_config(obj: Any, target: str, claim: dict) -> Any:
    obj = _as_mechanism(obj)
    if _is_mechanism(obj):
        if claim:
            hint = " (float_events: of the audit itself, beside samples:, applies to any mechanism)" \
                if "float_events" in claim else ""
            raise IntakeError(f"{target} is a mechanism object with its own claim ({obj.claim}); drop "
                              f"{', '.join(claim)} (or point callable: at a plain fn(data, size, rng) to audit "
                              f"another claim){hint}", key=next(iter(claim)))
        return _checked_mechanism(obj, target)
    if not callable(obj):
        raise IntakeError(f"{target} is neither callable nor a mechanism (an object with claim and "
                          f"sample(data, size, rng)): got {type(obj).__name__} {obj!r:.60}")
    takes_three, takes_none = _binds(obj, 3), _binds(obj, 0)
    if not claim:
        if takes_none:  # a zero-argument factory of a mechanism
            try:
                made = obj()
            except Exception as exc:  # the user's factory may raise anything: a config error at callable
                raise IntakeError(f"calling {target}() to make the mechanism raised {type(exc).__name__}: "
                                  f"{exc}") from None
            made = _as_mechanism(made)
            if not _is_mechanism(made):
                raise IntakeError(f"{target}() returned {type(made).__name__} {made!r:.60}, not a mechanism (an "
                                  "object with claim and sample(data, size, rng))")
            return _checked_mechanism(made, f"{target}()")
        if takes_three is False:
            raise IntakeError(f"{target} has the wrong signature: {_signature(obj)}; expected fn(data, size, rng) "
                              "with the claim keys, or a mechanism object (or a zero-argument factory of one)")
        raise IntakeError(f"{target} is a function fn(data, size, rng) but no claim is given: add epsilon: (and "
                          f"as needed {', '.join(k for k in CLAIM_KEYS if k != 'epsilon')}) to the mechanism",
                          key="epsilon")
    if takes_three is False:
        raise IntakeError(f"{target} has the wrong signature: {_signature(obj)}; with the claim keys it must be "
                          "callable as fn(data, size, rng)")
    if "epsilon" not in claim and claim.get("privacy_map") is None:
        raise IntakeError(f"is required to wrap {target} (the claimed epsilon, a number > 0; or a privacy_map: "
                          "with its input_metric)", key="epsilon")
    claim.setdefault("name", target)
    return _wrap(obj, claim)
