"""Event families: the objects that build candidate events, their registry, and ``events=``.

A family is an instance of a :class:`Family` subclass that its module registers (:func:`register`)
when it is imported; the package imports every module it holds (:func:`discover`), so a new family
is one new module. A family knows

* which output laws it reads (``laws``: ``"real"`` and/or ``"finite"``, the mechanism's ``kind``);
* which named sets include it (``presets``: ``"all"``, ``"thresholds"``; none = opt-in, like
  ``floats``), or that it is always on (``always``);
* how to build its candidate events from the selection draws (:meth:`Family.candidates`).

:func:`build_candidates` asks every selected family in ``order`` and joins their blocks: the
candidate order (and so every tie in the selection) is fixed by the families' ``order``.
:func:`resolve_events` turns ``events=`` / ``float_events=`` of an audit and the mechanism's own
default set into the set of family names searched.
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass
from functools import cached_property
from typing import Any, ClassVar

import numpy as np

from dpharness.mechanisms.base import ParamError
from dpharness.verifiers.events.core import Candidates, concat

__all__ = ["Family", "Draws", "register", "registry", "family_names", "discover", "build_candidates",
           "event_families", "mechanism_families", "resolve_events", "check_events", "check_float_events", "PRESETS",
           "FLOATS"]

#: The named sets of families (``events="all"``, the default, and ``events="thresholds"``).
PRESETS = ("all", "thresholds")
#: The family that ``float_events=True/False`` switches on and off.
FLOATS = "floats"

_FAMILIES: dict[str, Family] = {}


@dataclass(frozen=True, eq=False)
class Draws:
    """The selection draws under D (``y1``) and D' (``y2``) as the families read them, with the
    mechanism's output law (``finite``) and the names of the selected ``families``."""

    y1: Any
    y2: Any
    finite: bool
    families: frozenset
    #: ``(d1, d2, claim)`` of the pair being audited, when the caller knows it (events relative to
    #: the data read it: :mod:`verifiers.events.reachable`); None otherwise
    context: Any = None

    @property
    def law(self) -> str:
        return "finite" if self.finite else "real"

    @property
    def rows(self) -> bool:
        """Vector outputs: one row per draw."""
        return np.ndim(self.y1) >= 2

    @cached_property
    def flat(self) -> tuple[np.ndarray, np.ndarray]:
        """The draws as 2-D rows ``(n, width)``."""
        return (np.asarray(self.y1).reshape(len(self.y1), -1), np.asarray(self.y2).reshape(len(self.y2), -1))

    @property
    def width(self) -> int:
        return int(self.flat[0].shape[1])

    @property
    def numeric(self) -> bool:
        """Both datasets' rows are numbers (booleans, integers or floats)."""
        return self.flat[0].dtype.kind in "biuf" and self.flat[1].dtype.kind in "biuf"


class Family:
    """A family of candidate events. Subclasses set the class attributes and :meth:`candidates`;
    their module registers one instance with :func:`register`."""

    #: The name ``events=`` uses.
    name: ClassVar[str] = ""
    #: Position of the family's blocks in the candidate list (smaller first).
    order: ClassVar[float] = 100.0
    #: The output laws (mechanism kinds, :data:`mechanisms.contracts.OUTPUT_KINDS`) whose draws it reads.
    laws: ClassVar[tuple[str, ...]] = ("real", "finite")
    #: The named sets (:data:`PRESETS`) that include it; none: opt-in (named, or the mechanism's default).
    presets: ClassVar[tuple[str, ...]] = ("all",)
    #: Always searched, whatever ``events`` says.
    always: ClassVar[bool] = False
    #: When it gives candidates, they are the only ones (the other families cannot read the draws).
    exclusive: ClassVar[bool] = False

    def candidates(self, d: Draws) -> list[Candidates]:
        """Candidate blocks from the selection draws ``d`` (empty when the family does not apply)."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<event family {self.name!r}>"


def register(family: Family) -> Family:
    """Add ``family`` to the registry (a module calls this once per family it defines)."""
    if not isinstance(family, Family) or not isinstance(family.name, str) or not family.name:
        raise TypeError(f"register needs a Family instance with a name, got {family!r}")
    old = _FAMILIES.get(family.name)
    if old is not None and type(old).__qualname__ != type(family).__qualname__:
        raise ValueError(f"event family {family.name!r} is already registered ({type(old).__qualname__})")
    if family.name in PRESETS:
        raise ValueError(f"{family.name!r} names a set of families, not a family")
    _FAMILIES[family.name] = family
    return family


def discover() -> None:
    """Import every module of :mod:`verifiers.events`, so that each registers its families."""
    pkg = importlib.import_module("dpharness.verifiers.events")
    for info in pkgutil.iter_modules(pkg.__path__):
        importlib.import_module(f"{pkg.__name__}.{info.name}")


def registry() -> tuple[Family, ...]:
    """Every registered family, in candidate order."""
    return tuple(sorted(_FAMILIES.values(), key=lambda f: (f.order, f.name)))


def family_names() -> tuple[str, ...]:
    return tuple(f.name for f in registry())


def build_candidates(y1: Any, y2: Any, finite: bool, families: Any, context: Any = None) -> Candidates:
    """Candidate events of the selected ``families`` (names) from the selection draws: every family
    that reads this output law, in order, its blocks joined (:func:`verifiers.events.concat`).
    ``context``: ``(d1, d2, claim, ends)`` of the pair (:func:`verifiers.events.reachable.data_context`),
    for the families that relate outputs to the data."""
    d = Draws(y1, y2, bool(finite), frozenset(families), context)
    blocks: list[Candidates] = []
    for fam in registry():
        if (fam.name not in d.families and not fam.always) or d.law not in fam.laws:
            continue
        got = fam.candidates(d)
        if got and fam.exclusive:
            return concat(got)
        blocks.extend(got)
    return concat(blocks)


# --------------------------------------------------------------------------------------------
# events= and float_events=

def _accepted() -> str:
    return (f"{', '.join(map(repr, PRESETS))}, an event family name or a set of them "
            f"(families: {', '.join(map(repr, family_names()))})")


def check_events(events: Any, name: str = "events") -> None:
    """``ValueError`` naming ``name`` and the accepted values unless ``events`` is None, a preset,
    a family name or a non-empty collection of them."""
    items = [events] if isinstance(events, str) else events
    ok = events is None
    if not ok and isinstance(items, (list, tuple, set, frozenset)) and len(items) > 0:
        ok = all(isinstance(x, str) and (x in PRESETS or x in _FAMILIES) for x in items)
    if not ok:
        raise ParamError(name, f"{name} must be None (the mechanism's default), {_accepted()}; got {events!r}")


def _preset(p: str) -> frozenset[str]:
    return frozenset(f.name for f in _FAMILIES.values() if p in f.presets)


def event_families(events: Any = "all", float_events: Any = None, default: Any = None,
                   name: str = "events") -> frozenset[str]:
    """The names of the families searched for ``events`` (:func:`check_events`): a family name
    stands for itself; a preset for its families plus the opt-in families (no preset) of
    ``default`` (the mechanism's own set; None: no opt-in family); None for ``default`` itself
    (the preset "all" when None). ``float_events`` True adds :data:`FLOATS`, False removes it.
    The families that are always on are included."""
    check_events(events, name)
    own = frozenset(default) if default is not None else None
    if events is None:
        events = "all" if own is None else own
    opt_in = frozenset(n for n in (own or ()) if n in _FAMILIES and not _FAMILIES[n].presets)
    out: set[str] = set()
    for x in ([events] if isinstance(events, str) else events):
        out |= (_preset(x) | opt_in) if x in PRESETS else {x}
    if float_events is not None:
        if float_events:
            out.add(FLOATS)
        else:
            out.discard(FLOATS)
    return frozenset(out | {f.name for f in _FAMILIES.values() if f.always})


def mechanism_families(mechanism: Any) -> frozenset[str]:
    """The mechanism's own default set: its ``event_families`` attribute when it has one, else the
    preset "all" plus :data:`FLOATS` when its ``float_events`` attribute is True (library adapters)."""
    own = getattr(mechanism, "event_families", None)
    if own is not None:
        return event_families(own, name="event_families")
    fl = getattr(mechanism, "float_events", False)
    return event_families("all", float_events=bool(fl) if isinstance(fl, (bool, np.bool_)) else False)


def check_float_events(float_events: Any) -> bool | None:
    """``float_events`` must be True, False or None (``TypeError`` naming it otherwise)."""
    if float_events is not None and not isinstance(float_events, (bool, np.bool_)):
        raise TypeError(f"float_events must be True, False or None (the mechanism's default), got {float_events!r}")
    return None if float_events is None else bool(float_events)


def resolve_events(mechanism: Any, events: Any = None, float_events: Any = None) -> frozenset[str]:
    """The families an audit of ``mechanism`` searches: ``events`` (None: the mechanism's own set,
    :func:`mechanism_families`; a preset adds the mechanism's opt-in families) with ``float_events``
    (True/False: :data:`FLOATS` on/off; None: as the set says)."""
    check_events(events)
    fl = check_float_events(float_events)
    return event_families(events, fl, default=mechanism_families(mechanism))
