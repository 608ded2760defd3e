"""The peers' benchmark suites: the mechanisms other verifiers are evaluated on, as audit targets.

Each suite (:data:`SUITES`: DP-Sniper's and StatDP's evaluation mechanisms) is a list of
:class:`SuiteEntry`: a mechanism implemented from its paper's definition as a
:func:`verifiers.wrap`-ed sampler (raw output: scalars, label vectors or real vectors with NaN for
"no answer"), the input pairs that paper audits it on, whether it is broken, its true epsilon where
it can be derived, and the bounds the suite's own tool published for it (for side-by-side tables).

Entries are registered by :func:`suite_entry` (a decorator on a zero-argument factory), so that a
suite module only has to be imported to be listed; :func:`entries` and :func:`get` read them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable

__all__ = ["SuiteEntry", "SUITES", "suite_entry", "entries", "get", "suites"]

#: The suites and where their definitions come from.
SUITES: dict[str, str] = {
    "dpsniper": "Bichsel, Steffen, Bogunovic, Vechev: DP-Sniper, IEEE S&P 2021 (evaluation mechanisms)",
    "statdp": "Ding, Wang, Wang, Zhang, Kifer: Detecting Violations of Differential Privacy, CCS 2018",
    "library_bugs": "Privacy bugs documented for released DP libraries, re-implemented with their fixed twins",
}

_FACTORIES: dict[str, dict[str, Callable[[], "SuiteEntry"]]] = {s: {} for s in SUITES}


@dataclass(frozen=True, eq=False)
class SuiteEntry:
    """One mechanism of a peer's suite.

    ``mechanism`` is auditable (a :class:`verifiers.WrappedMechanism`); ``pairs`` are the input
    pairs the suite's paper audits it on, each legal under ``mechanism.claim.neighbours``;
    ``true_epsilon`` is the worst-case epsilon over those pairs' relation where it can be derived
    (``math.inf`` for support bugs, ``None`` when unknown); ``published`` maps a label (e.g.
    ``"dpsniper_reg"``) to the lower bound the suite's tool published for it.
    """

    suite: str
    name: str
    mechanism: Any
    pairs: tuple[tuple[Any, Any], ...]
    broken: bool
    true_epsilon: float | None = None
    published: dict[str, float] = field(default_factory=dict)
    source: str = ""
    note: str = ""

    @property
    def qualified(self) -> str:
        return f"{self.suite}/{self.name}"

    @property
    def claimed_epsilon(self) -> float:
        return float(self.mechanism.claim.epsilon)


def suite_entry(suite: str, name: str) -> Callable[[Callable[[], SuiteEntry]], Callable[[], SuiteEntry]]:
    """Decorator: register a zero-argument factory returning the :class:`SuiteEntry` ``suite/name``."""
    if suite not in SUITES:
        raise ValueError(f"suite must be one of {', '.join(SUITES)}, got {suite!r}")

    def deco(fn: Callable[[], SuiteEntry]) -> Callable[[], SuiteEntry]:
        if name in _FACTORIES[suite]:
            raise ValueError(f"suite entry {suite}/{name} already registered")
        _FACTORIES[suite][name] = fn
        return fn

    return deco


def suites() -> list[str]:
    return list(SUITES)


def entries(suite: str) -> list[SuiteEntry]:
    """Every entry of ``suite``, in registration order (the paper's table order)."""
    if suite not in SUITES:
        raise ValueError(f"suite must be one of {', '.join(SUITES)}, got {suite!r}")
    return [f() for f in _FACTORIES[suite].values()]


def get(name: str) -> SuiteEntry:
    """The entry ``"suite/name"``; ``ValueError`` listing the accepted names otherwise."""
    suite, sep, plain = str(name).partition("/")
    if not sep or suite not in SUITES or plain not in _FACTORIES[suite]:
        known = ", ".join(f"{s}/{n}" for s in SUITES for n in _FACTORIES[s])
        raise ValueError(f"unknown suite mechanism {name!r}; accepted: {known or '(none registered)'}")
    e = _FACTORIES[suite][plain]()
    if e.true_epsilon is not None and not (math.isinf(e.true_epsilon) or e.true_epsilon >= 0):
        raise ValueError(f"{name}: true_epsilon must be >= 0 or inf")
    return e
