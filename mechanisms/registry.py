"""The one registry of mechanisms, with namespaces: ``make(name, **params)`` and ``available()``.

Names live in namespaces. The default namespace (:data:`DEFAULT`) holds the real mechanisms of
:mod:`mechanisms` and is what a plain name means everywhere (``make("exponential", ...)``,
``available()``, ``dpharness list``). Other namespaces hold mechanisms that must not be mistaken
for real ones, e.g. ``zoo``, the verifier's deliberately broken mechanisms and their correct twins
(:mod:`verifiers.zoo`). A name in another namespace is written ``"namespace/name"``
(``make("zoo/rnm_laplace_value")``) or given with ``namespace=`` (``make("rnm_laplace_value",
namespace="zoo")``); the same plain name may exist in several namespaces.

Every entry is a frozen dataclass class registered with :func:`register`; namespaces may attach
metadata to their entries (the zoo records ``broken`` and ``twin``), read with :func:`entry`.
"""

from __future__ import annotations

import dataclasses
import difflib
import importlib
import importlib.metadata
import inspect
from dataclasses import dataclass, field
from typing import Any, Callable, TypeVar

__all__ = [
    "DEFAULT",
    "SEPARATOR",
    "Entry",
    "register",
    "make",
    "available",
    "namespaces",
    "get",
    "entry",
    "entries",
    "parameters",
    "describe",
    "split_name",
]

#: The namespace of plain names: the real mechanisms.
DEFAULT = "default"
#: Separates a namespace from a name: ``"zoo/rnm_laplace_value"``.
SEPARATOR = "/"

T = TypeVar("T", bound=type)


@dataclass(frozen=True, eq=False)
class Entry:
    """One registered mechanism class: ``namespace``, plain ``name``, the class and its metadata."""

    namespace: str
    name: str
    cls: type
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def qualified(self) -> str:
        """``name`` in the default namespace, ``namespace/name`` elsewhere."""
        return self.name if self.namespace == DEFAULT else f"{self.namespace}{SEPARATOR}{self.name}"

    @property
    def summary(self) -> str:
        """First line of the class docstring."""
        doc = (inspect.getdoc(self.cls) or "").strip().splitlines()
        return doc[0] if doc else ""


#: namespace -> {plain name -> class}. ``_REGISTRY`` is the default namespace's table (the
#: registry's original name -> class dict, which tests may patch to swap in a degraded class).
_REGISTRY: dict[str, type] = {}
_SPACES: dict[str, dict[str, type]] = {DEFAULT: _REGISTRY}
#: (namespace, name) -> metadata given at registration.
_META: dict[tuple[str, str], dict[str, Any]] = {}


def _check_namespace(namespace: Any) -> str:
    if not isinstance(namespace, str) or not namespace or SEPARATOR in namespace:
        raise ValueError(f"namespace must be a non-empty string without {SEPARATOR!r}, got {namespace!r}")
    return namespace


def split_name(name: Any, namespace: str | None = None) -> tuple[str, str]:
    """(namespace, plain name) of ``name``: ``"zoo/x"`` -> ("zoo", "x"); a plain name is in
    ``namespace`` (default :data:`DEFAULT`). A qualified name that contradicts ``namespace`` raises."""
    if not isinstance(name, str) or not name:
        raise ValueError(f"mechanism name must be a non-empty string, got {name!r}")
    if SEPARATOR in name:
        ns, plain = name.split(SEPARATOR, 1)
        if namespace is not None and namespace != ns:
            raise ValueError(f"mechanism name {name!r} is in namespace {ns!r}, not {namespace!r}")
        return _check_namespace(ns), plain
    return _check_namespace(DEFAULT if namespace is None else namespace), name


def register(name: str, *, namespace: str = DEFAULT, **meta: Any) -> Callable[[T], T]:
    """Class decorator: register a frozen mechanism dataclass as ``name`` in ``namespace``.

    Sets the class attributes ``name`` (the plain name) and ``namespace``; ``meta`` is stored
    with the entry (e.g. ``broken=True, twin="laplace"`` in the zoo).
    """
    ns, plain = split_name(name, namespace)

    def deco(cls: T) -> T:
        if not dataclasses.is_dataclass(cls):
            raise TypeError(f"{cls.__name__} must be a dataclass to be registered")
        table = _SPACES.setdefault(ns, {})
        old = table.get(plain)
        if old is not None and old is not cls:
            raise ValueError(f"mechanism name {plain!r} is already registered in namespace {ns!r} by {old.__name__}")
        cls.name = plain  # type: ignore[attr-defined]
        cls.namespace = ns  # type: ignore[attr-defined]
        table[plain] = cls
        _META[(ns, plain)] = dict(meta)
        return cls

    return deco


#: Namespaces whose mechanisms live above this layer (mechanisms with a known truth that the verifier is
#: tested on): namespace -> the module that registers them, imported the first time the namespace is used,
#: so that importing the mechanisms (or the verifier core) loads no catalogue. Other packages add
#: namespaces through the ``dpharness.namespaces`` entry-point group (name = namespace, value = module).
PROVIDERS: dict[str, str] = {"zoo": "dpharness.verifiers.controls.zoo"}


_PROVIDERS_FOUND: dict[str, str] | None = None
#: namespaces whose provider was imported (a provider is imported once, whatever it registers)
_LOADED: set[str] = set()


def _providers() -> dict[str, str]:
    """:data:`PROVIDERS` and the ``dpharness.namespaces`` entry points, read once (reading the
    installed distributions' metadata costs milliseconds: ``make`` must not pay it per call)."""
    global _PROVIDERS_FOUND
    if _PROVIDERS_FOUND is None:
        found = dict(PROVIDERS)
        for ep in importlib.metadata.entry_points(group="dpharness.namespaces"):
            found.setdefault(ep.name, ep.value)
        _PROVIDERS_FOUND = found
    return {**_PROVIDERS_FOUND, **PROVIDERS}


def _load(ns: str | None) -> None:
    """Import the provider of ``ns`` (every provider when None), once."""
    if ns is not None and (ns == DEFAULT or ns in _LOADED):
        return
    for name, module in _providers().items():
        if (ns is None or ns == name) and name not in _LOADED:
            _LOADED.add(name)
            if not _SPACES.get(name):
                importlib.import_module(module)


def namespaces() -> list[str]:
    """Sorted namespaces that hold at least one mechanism."""
    _load(None)
    return sorted(ns for ns, table in _SPACES.items() if table)


def _entry(ns: str, plain: str) -> Entry:
    return Entry(ns, plain, _SPACES[ns][plain], _META.get((ns, plain), {}))


def available(namespace: str | None = DEFAULT) -> list[str]:
    """Sorted plain names of the mechanisms of ``namespace`` (default: the real mechanisms).

    ``namespace=None`` lists every mechanism of every namespace by qualified name.
    """
    if namespace is None:
        _load(None)
        return sorted(_entry(ns, n).qualified for ns, table in _SPACES.items() for n in table)
    _load(_check_namespace(namespace))
    return sorted(_SPACES.get(namespace, {}))


def entry(name: str, namespace: str | None = None) -> Entry:
    """The :class:`Entry` of ``name``; ``ValueError`` listing the accepted names otherwise."""
    ns, plain = split_name(name, namespace)
    _load(ns)
    if plain in _SPACES.get(ns, {}):
        return _entry(ns, plain)
    _load(None)  # "did you mean" and "exists in another namespace" look at every namespace
    names = available(ns)
    what = "mechanism" if ns == DEFAULT else f"{ns} mechanism"
    close = difflib.get_close_matches(plain, names, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    elsewhere = sorted(_entry(s, plain).qualified for s, table in _SPACES.items() if s != ns and plain in table)
    also = f"; {' and '.join(map(repr, elsewhere))} exists in another namespace" if elsewhere else ""
    if not names:
        raise ValueError(f"unknown {what} {plain!r}{also}: no mechanism is registered in namespace {ns!r}; "
                         f"namespaces: {', '.join(namespaces())}")
    raise ValueError(f"unknown {what} {plain!r}{hint}{also}; accepted: {', '.join(names)}")


def entries(namespace: str | None = DEFAULT) -> list[Entry]:
    """The entries of ``namespace`` sorted by name (every namespace when None)."""
    if namespace is None:
        _load(None)
        return [_entry(ns, n) for ns in sorted(_SPACES) for n in sorted(_SPACES[ns])]
    return [_entry(namespace, n) for n in available(namespace)]


def get(name: str, namespace: str | None = None) -> type:
    """The class registered as ``name``; ``ValueError`` listing the accepted names otherwise."""
    return entry(name, namespace).cls


def parameters(name: str, namespace: str | None = None) -> dict[str, Any]:
    """Constructor parameters of ``name`` with their defaults (``inspect.Parameter.empty`` if required)."""
    cls = get(name, namespace)
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


def make(name: str, /, *, namespace: str | None = None, **params: Any) -> Any:
    """Build the mechanism registered as ``name`` (``"namespace/name"`` or ``namespace=``) with ``params``.

    Unknown names and unknown or missing parameters raise ``ValueError`` listing what is accepted;
    invalid values raise the mechanism's own ``ValueError``.
    """
    e = entry(name, namespace)
    accepted = parameters(e.name, e.namespace)
    unknown = sorted(set(params) - set(accepted))
    if unknown:
        raise ValueError(
            f"{e.qualified}: unknown parameter(s) {', '.join(unknown)}; accepted: {', '.join(accepted)}"
        )
    missing = [p for p, d in accepted.items() if d is inspect.Parameter.empty and p not in params]
    if missing:
        raise ValueError(
            f"{e.qualified}: missing required parameter(s) {', '.join(missing)}; accepted: {', '.join(accepted)}"
        )
    return e.cls(**params)


def describe(name: str, namespace: str | None = None) -> str:
    """One paragraph for ``dpharness list``: parameters, example claim, first docstring line."""
    e = entry(name, namespace)
    ps = []
    for p, d in parameters(e.name, e.namespace).items():
        ps.append(p if d is inspect.Parameter.empty else f"{p}={d!r}")
    try:
        mech, _ = e.cls.example()
        shown = ("epsilon", "delta", "noise", "sensitivity", "monotone")
        claim = f"{mech.claim}  [example: {', '.join(f'{k}={v!r}' for k, v in mech.params().items() if k in shown)}]"
    except (NotImplementedError, AttributeError):
        claim = "(no example)"
    return f"{e.qualified}\n    {e.summary}\n    parameters: {', '.join(ps)}\n    claim: {claim}"
