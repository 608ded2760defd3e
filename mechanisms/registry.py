"""Registry of mechanisms: ``make(name, **params)`` and ``available()``."""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any, Callable, TypeVar

__all__ = ["register", "make", "available", "get", "describe"]

_REGISTRY: dict[str, type] = {}

T = TypeVar("T", bound=type)


def register(name: str) -> Callable[[T], T]:
    """Class decorator: register a frozen mechanism dataclass under ``name``."""

    def deco(cls: T) -> T:
        if not dataclasses.is_dataclass(cls):
            raise TypeError(f"{cls.__name__} must be a dataclass to be registered")
        if name in _REGISTRY and _REGISTRY[name] is not cls:
            raise ValueError(f"mechanism name {name!r} is already registered by {_REGISTRY[name].__name__}")
        cls.name = name  # type: ignore[attr-defined]
        _REGISTRY[name] = cls
        return cls

    return deco


def available() -> list[str]:
    """Sorted names of every registered mechanism."""
    return sorted(_REGISTRY)


def get(name: str) -> type:
    """The class registered under ``name``; ``ValueError`` listing the accepted names otherwise."""
    try:
        return _REGISTRY[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown mechanism {name!r}; accepted: {', '.join(available())}") from None


def parameters(name: str) -> dict[str, Any]:
    """Constructor parameters of ``name`` with their defaults (``inspect.Parameter.empty`` if required)."""
    cls = get(name)
    out: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if not f.init:
            continue
        if f.default is not dataclasses.MISSING:
            out[f.name] = f.default
        elif f.default_factory is not dataclasses.MISSING:  # type: ignore[misc]
            out[f.name] = f.default_factory()  # type: ignore[misc]
        else:
            out[f.name] = inspect.Parameter.empty
    return out


def make(name: str, **params: Any) -> Any:
    """Build the mechanism registered as ``name`` with ``params``.

    Unknown names and unknown or missing parameters raise ``ValueError`` listing what is accepted;
    invalid values raise the mechanism's own ``ValueError``.
    """
    cls = get(name)
    accepted = parameters(name)
    unknown = sorted(set(params) - set(accepted))
    if unknown:
        raise ValueError(
            f"{name}: unknown parameter(s) {', '.join(unknown)}; accepted: {', '.join(accepted)}"
        )
    missing = [p for p, d in accepted.items() if d is inspect.Parameter.empty and p not in params]
    if missing:
        raise ValueError(f"{name}: missing required parameter(s) {', '.join(missing)}; accepted: {', '.join(accepted)}")
    return cls(**params)


def describe(name: str) -> str:
    """One paragraph for ``dpharness list``: parameters, example claim, first docstring line."""
    cls = get(name)
    ps = []
    for p, d in parameters(name).items():
        ps.append(p if d is inspect.Parameter.empty else f"{p}={d!r}")
    doc = (inspect.getdoc(cls) or "").strip().splitlines()
    head = doc[0] if doc else ""
    try:
        mech, _ = cls.example()
        claim = f"{mech.claim}  [example: {', '.join(f'{k}={v!r}' for k, v in mech.params().items() if k in ('epsilon', 'delta', 'noise', 'sensitivity', 'monotone'))}]"
    except NotImplementedError:
        claim = "(no example)"
    return f"{name}\n    {head}\n    parameters: {', '.join(ps)}\n    claim: {claim}"
