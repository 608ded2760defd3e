"""The contracts between mechanisms, their exact laws and the verifier, written down once.

Every mechanism of dpharness (registered ones, the verifier's zoo, wrapped functions, peer
adapters) is used through these structural types; nothing has to subclass anything. They are
``typing.Protocol``s, ``runtime_checkable`` where the verifier decides what it can do with an
object (``isinstance`` then checks that the members exist, not their signatures).

* :class:`Auditable` -- ``claim`` (a :class:`PrivacyClaim`) and ``sample(data, size=None,
  rng=None)``: all that a statistical audit needs.
* :class:`Rebuildable` -- ``params()``, the constructor parameters that rebuild the instance
  (``make(name, **mech.params())``).
* :class:`FiniteLaw` -- ``support(data)`` and ``log_prob(data)``, aligned: the exact law of a
  finite-output mechanism (``kind == "finite"``).
* :class:`HasDistribution` -- ``distribution(data)`` returning an :class:`OutputLaw`.
* :class:`OutputLaw` -- one of the exact laws of :mod:`mechanisms.laws`, tagged by ``law`` (one of
  :data:`LAW_KINDS`), with ``cdf(x)`` and ``sample(size, rng)``.
* :class:`HasExample` -- ``example()``, a small valid (mechanism, data) pair.
* :class:`KnownLoss` -- a mechanism whose real worst-case epsilon is known (``true_epsilon``) with
  a documented ``witness()``: the verifier's zoo.

``kind`` ("finite" or "real") is declared, not inferred: a mechanism may release an index without
exposing its law (``kind = "finite"``, no ``log_prob``), and a real-valued one may expose a law.
:func:`output_kind` reads it (default "real").
"""

from __future__ import annotations

from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np

from dpharness.mechanisms.base import PrivacyClaim

__all__ = [
    "Auditable",
    "Rebuildable",
    "FiniteLaw",
    "HasDistribution",
    "OutputLaw",
    "HasExample",
    "KnownLoss",
    "LAW_KINDS",
    "OUTPUT_KINDS",
    "OutputKind",
    "output_kind",
    "is_finite",
    "check_auditable",
]

#: The ``law`` tags of :mod:`mechanisms.laws` (PiecewiseDensity, GridRunsLaw, LocationScaleLaw).
LAW_KINDS: tuple[str, ...] = ("piecewise", "grid_runs", "location_scale")
#: Values of a mechanism's ``kind``.
OUTPUT_KINDS: tuple[str, ...] = ("finite", "real")
OutputKind = Literal["finite", "real"]


@runtime_checkable
class Auditable(Protocol):
    """A mechanism as the verifier sees it: a privacy claim and a seeded sampler.

    ``sample`` returns ``size`` draws with the sample axis first (one draw, not an array, for
    ``size=None``); ``rng`` is anything :func:`mechanisms.base.as_rng` accepts.
    """

    @property
    def claim(self) -> PrivacyClaim: ...

    def sample(self, data: Any, size: Any = None, rng: Any = None) -> np.ndarray: ...


@runtime_checkable
class Rebuildable(Protocol):
    """``params()`` returns what ``make(name, **params)`` needs to rebuild an equal instance."""

    def params(self) -> dict[str, Any]: ...


@runtime_checkable
class FiniteLaw(Protocol):
    """Exact law of a finite-output mechanism: ``exp(log_prob(data))[i]`` is the probability of
    ``support(data)[i]``; the probabilities sum to 1 (-inf for impossible outputs)."""

    def support(self, data: Any) -> np.ndarray: ...

    def log_prob(self, data: Any) -> np.ndarray: ...


@runtime_checkable
class OutputLaw(Protocol):
    """An exact output law of :mod:`mechanisms.laws`; ``law`` is one of :data:`LAW_KINDS`."""

    law: str

    def cdf(self, x: Any) -> np.ndarray: ...

    def sample(self, size: Any = None, rng: Any = None) -> np.ndarray: ...


@runtime_checkable
class HasDistribution(Protocol):
    """A mechanism exposing its exact output law on a dataset."""

    def distribution(self, data: Any) -> OutputLaw: ...


@runtime_checkable
class HasExample(Protocol):
    """``example()`` (a classmethod): a small valid (mechanism, data) pair for listings and tests."""

    def example(self) -> tuple[Any, Any]: ...


@runtime_checkable
class KnownLoss(Protocol):
    """A mechanism with a known real worst-case epsilon and a documented witness (the zoo).

    ``true_epsilon`` is ``inf`` for support bugs; ``witness()`` returns a legal pair, an event,
    its direction and the event's exact probabilities under both datasets.
    """

    @property
    def claim(self) -> PrivacyClaim: ...

    @property
    def true_epsilon(self) -> float: ...

    def sample(self, data: Any, size: Any = None, rng: Any = None) -> np.ndarray: ...

    def witness(self) -> Any: ...


def output_kind(mechanism: Any) -> str:
    """The declared ``kind`` of ``mechanism``: "finite" or "real" (default "real")."""
    kind = getattr(mechanism, "kind", "real")
    return kind if kind in OUTPUT_KINDS else "real"


def is_finite(mechanism: Any) -> bool:
    """True when ``mechanism`` declares finite outputs (``kind == "finite"``)."""
    return output_kind(mechanism) == "finite"


def check_auditable(mechanism: Any, name: str = "mechanism") -> Auditable:
    """Return ``mechanism`` if it satisfies :class:`Auditable`, else raise ``TypeError`` naming
    ``name`` and what is accepted (a class instead of an instance is called out as such)."""
    accepted = ("a mechanism: an object with `claim` (a PrivacyClaim) and `sample(data, size, rng)`, "
                "e.g. mechanisms.make(...); to audit a plain function, wrap it with verifiers.wrap(fn, epsilon=...)")
    if isinstance(mechanism, type):
        raise TypeError(f"{name} must be a mechanism instance, got the class {mechanism.__name__}; "
                        f"build one first (e.g. {mechanism.__name__}(...) or mechanisms.make(name, ...))")
    if not isinstance(mechanism, Auditable) or not callable(getattr(mechanism, "sample", None)):
        shown = repr(mechanism)
        shown = shown if len(shown) <= 60 else shown[:57] + "..."
        raise TypeError(f"{name} must be {accepted}; got {type(mechanism).__name__} {shown}")
    if not isinstance(mechanism.claim, PrivacyClaim):
        raise TypeError(f"{name}.claim must be a mechanisms.PrivacyClaim, got {type(mechanism.claim).__name__}")
    return mechanism
