"""One catalogue of the mechanisms an audit config can name, by namespace, and the parsed
``mechanism:`` of an audit (:class:`MechanismRef`).

Namespaces (:data:`NAMESPACES`):

* ``registry`` -- the registered mechanisms of :mod:`dpharness.mechanisms` (plain names), and
  ``all`` (one audit per registered mechanism, built from its ``example()``);
* ``zoo`` -- the verifier's deliberately broken mechanisms and their twins (:mod:`verifiers.controls.zoo`);
* ``suite`` -- the mechanisms of the peers' benchmark suites, ``SUITE/NAME`` (:mod:`verifiers.controls.suites`);
* ``peer`` -- other libraries' implementations (:mod:`bench.peers`).

A config names one with the single key ``name:`` -- ``{name: "zoo/rnm_laplace_value", epsilon: 1}``,
``{name: "suite/dpsniper/NoisyHist2"}``, ``{name: "peer/diffprivlib_median", ...}``, or a plain
registered name ``{name: exponential, ...}`` -- or with the namespace's own key, the older
spelling that stays accepted (``{zoo: rnm_laplace_value, epsilon: 1}``). Both parse to the same
:class:`MechanismRef`, so an audit does not depend on the spelling.

Your own code (``callable:``) and a released library's object (``library:``) are import paths,
not names of the catalogue: they keep their keys, are parsed by :mod:`bench.audits.spec` and built
by :mod:`bench.audits.build`; a :class:`MechanismRef` holds them too.

Adding a namespace is one entry of :data:`NAMESPACES` (its names, parameter names and builder).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Callable

from dpharness.bench.config import Ctx

__all__ = ["MechanismRef", "Namespace", "NAMESPACES", "MECHANISM_KEYS", "USER_KINDS", "as_ref", "build",
           "is_word", "parse_catalogued", "split_name"]

#: Kinds whose target is an import path (the user's code, a released library's object), not a catalogue name.
USER_KINDS = ("callable", "library")
#: The keys that name a mechanism: the one key ``name``, then the namespaces' own keys and the import paths.
MECHANISM_KEYS = ("name", "zoo", "registry", "peer", "suite", *USER_KINDS)


@dataclass(frozen=True, eq=False)
class MechanismRef(Mapping):
    """The parsed ``mechanism:`` of an audit: its kind (a namespace of :data:`NAMESPACES`, or
    ``callable`` / ``library``), name and parameters, checked once by the parse.

    It reads as the mapping of the kind's own spelling (``{"zoo": "laplace", "epsilon": 1.0}``,
    ``{"registry": "exponential", "example": True}``, ``{"callable": "pkg.mod:fn", ...claim}``),
    whichever key the config used; ``key`` is that key (``name`` or the kind), which error
    messages name (``audits[i].mechanism.<key>``).
    """

    fields: dict[str, Any]
    key: str = ""
    kind: str = field(init=False)

    def __post_init__(self) -> None:
        kinds = [k for k in MECHANISM_KEYS[1:] if k in self.fields]
        if len(kinds) != 1:
            raise ValueError(f"a mechanism names exactly one of {', '.join(MECHANISM_KEYS[1:])}, got {self.fields!r}")
        object.__setattr__(self, "kind", kinds[0])
        if not self.key:
            object.__setattr__(self, "key", kinds[0])

    @property
    def name(self) -> Any:
        """The name in its namespace (``laplace``, ``dpsniper/NoisyHist2``), or the import path."""
        return self.fields[self.kind]

    @property
    def params(self) -> dict[str, Any]:
        """The parameters of a catalogue mechanism (every key but the kind and ``example``)."""
        return {k: v for k, v in self.fields.items() if k not in (self.kind, "example")}

    @property
    def example(self) -> bool:
        """``example: true``: the registry's ``example()`` instance."""
        return bool(self.fields.get("example"))

    @property
    def user_code(self) -> bool:
        """The user's code or a released library's (any exception it raises on data is reported)."""
        return self.kind in USER_KINDS

    def __getitem__(self, key: str) -> Any:
        return self.fields[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.fields)

    def __len__(self) -> int:
        return len(self.fields)

    def __repr__(self) -> str:
        return f"MechanismRef({self.fields!r}, key={self.key!r})"


def as_ref(spec: Mapping) -> MechanismRef:
    """A :class:`MechanismRef` of ``spec`` (returned as it is when it is one already)."""
    return spec if isinstance(spec, MechanismRef) else MechanismRef(dict(spec))


def _zoo() -> Any:
    from dpharness.verifiers.controls import zoo

    return zoo


def _suites() -> Any:
    from dpharness.verifiers.controls import suites

    return suites


def _peers() -> Any:
    from dpharness.bench import peers

    return peers


def _registry_names() -> list[str]:
    from dpharness import mechanisms

    return ["all", *mechanisms.available()]


def _registry_params(name: str) -> list[str]:
    from dpharness import mechanisms

    return list(mechanisms.registry.parameters(name))


def _build_registry(ref: MechanismRef) -> tuple[Any, str, float | None]:
    from dpharness import mechanisms

    if ref.example:
        m, _ = mechanisms.registry.get(ref.name).example()
    else:
        m = mechanisms.make(ref.name, **ref.params)
    return m, ref.name, None


def _zoo_params(name: str) -> list[str]:
    from dataclasses import fields

    return [f.name for f in fields(_zoo().get(name).cls)]


def _build_zoo(ref: MechanismRef) -> tuple[Any, str, float | None]:
    m = _zoo().make(ref.name, **ref.params)
    return m, f"zoo:{ref.name}", float(m.true_epsilon)


def _suite_names() -> list[str]:
    suites = _suites()
    return [e.qualified for s in suites.suites() for e in suites.entries(s)]


def _build_suite(ref: MechanismRef) -> tuple[Any, str, float | None]:
    e = _suites().get(ref.name)
    return e.mechanism, e.qualified, e.true_epsilon


def _build_peer(ref: MechanismRef) -> tuple[Any, str, float | None]:
    return _peers().build(ref.name, **ref.params), f"peer:{ref.name}", None


@dataclass(frozen=True)
class Namespace:
    """One namespace of the catalogue: what its entries are called in messages, their names and
    accepted parameter names (no library is imported to list them), and how one is built:
    ``build(ref) -> (mechanism, display name, true epsilon or None)``."""

    what: str
    names: Callable[[], list[str]]
    parameters: Callable[[str], list[str]]
    build: Callable[[MechanismRef], tuple[Any, str, float | None]]
    #: how ``name:`` spells an entry (``zoo/NAME``); the registry's names are plain
    prefix: str = ""


#: The catalogue: namespace -> :class:`Namespace`. The key is also the namespace's own config key.
NAMESPACES: dict[str, Namespace] = {
    "zoo": Namespace("zoo mechanism", lambda: _zoo().available(), _zoo_params, _build_zoo, "zoo/"),
    "registry": Namespace("mechanism", _registry_names, _registry_params, _build_registry),
    "peer": Namespace("peer mechanism", lambda: list(_peers().AUDIT_PEERS),
                      lambda name: list(_peers().parameters(name)), _build_peer, "peer/"),
    "suite": Namespace("suite mechanism", _suite_names, lambda name: [], _build_suite, "suite/"),
}


def build(ref: MechanismRef) -> tuple[Any, str, float | None]:
    """(mechanism, display name, true epsilon or None) of a catalogue mechanism."""
    return NAMESPACES[ref.kind].build(ref)


def split_name(name: str) -> tuple[str, str] | None:
    """(namespace, name in it) of a ``name:`` value: ``"zoo/laplace"`` -> ("zoo", "laplace"),
    ``"suite/dpsniper/NoisyHist2"`` -> ("suite", "dpsniper/NoisyHist2"), a plain name -> ("registry",
    name); None for an unknown namespace."""
    for ns, space in NAMESPACES.items():
        if space.prefix and name.startswith(space.prefix):
            return ns, name[len(space.prefix):]
    return None if "/" in name else ("registry", name)


def _spellings() -> str:
    shown = [f"\"{s.prefix}NAME\"" for s in NAMESPACES.values() if s.prefix]
    return ", ".join(shown) + " or a registered mechanism's plain name (or all)"


def parse_catalogued(c: Ctx, raw: dict, key: str) -> MechanismRef:
    """``mechanism:`` naming a catalogue entry with ``key`` (``name`` or a namespace's key): a known
    name, known parameter names, and epsilon, delta and sensitivity in range whatever the mechanism."""
    if key == "name":
        given = raw["name"]
        if not isinstance(given, str) or not given:
            c.error("mechanism.name", f"must be a mechanism name: {_spellings()}; got {given!r}")
        where = split_name(given)
        if where is None:
            c.error("mechanism.name", f"unknown namespace {given.split('/', 1)[0]!r} in {given!r}; accepted: "
                    f"{_spellings()}")
        ns, name = where
    else:
        ns, name = key, raw[key]
    space = NAMESPACES[ns]
    names = space.names()
    if not isinstance(name, str) or name not in names:
        shown = names if key != "name" else [space.prefix + n for n in names]
        c.error(f"mechanism.{key}", f"unknown {space.what} {name!r}; accepted: {', '.join(shown)}")
    params = {k: v for k, v in raw.items() if k not in (key, "example")}
    if "example" in raw:
        if ns != "registry":
            c.error("mechanism.example", "only registry mechanisms have an example(); accepted keys: "
                    f"{key}, and the parameters")
        c.get(raw, "example", bool, path="mechanism")
        if raw.get("example") and params:
            c.error(f"mechanism.{next(iter(params))}", "example: true builds the registry's example(); "
                    "drop the parameters or example: true")
    if name == "all":
        if params:
            c.error(f"mechanism.{next(iter(params))}", f"{key}: all takes no parameters (each mechanism is built "
                    "from its example())")
        return _ref(raw, key, ns, name)
    if not raw.get("example"):
        accepted = space.parameters(name)
        for p in params:
            if p not in accepted:
                c.error(f"mechanism.{p}", f"unknown parameter of {ns} {name!r}; accepted: "
                        f"{', '.join(accepted) or 'none (a suite entry is the paper’s own instance)'}")
    if "epsilon" in params:
        c.number(raw, "epsilon", lo=0.0, lo_open=True, path="mechanism")
    if "delta" in params:
        c.number(raw, "delta", lo=0.0, hi=1.0, hi_open=True, path="mechanism")
    if "sensitivity" in params and not is_word(params["sensitivity"]):
        # (a word is a named sensitivity, e.g. smooth_sensitivity_median's replace_one: its builder checks it)
        c.number(raw, "sensitivity", lo=0.0, lo_open=True, path="mechanism")
    return _ref(raw, key, ns, name)


def _ref(raw: dict, key: str, ns: str, name: str) -> MechanismRef:
    """The parsed mechanism in the namespace's own spelling, the keys in the config's order."""
    return MechanismRef({(ns if k == key else k): (name if k == key else v) for k, v in raw.items()}, key=key)


def is_word(v: Any) -> bool:
    """Text that is not a number (PyYAML reads 1e-3 as text)."""
    if not isinstance(v, str):
        return False
    try:
        float(v)
    except ValueError:
        return True
    return False
