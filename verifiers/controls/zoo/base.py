"""Shared parts of the zoo (:mod:`verifiers.zoo`): registration, the documented witness, helpers.

Zoo mechanisms are registered in the one mechanism registry under the namespace ``zoo``
(:data:`ZOO`; ``mechanisms.make("zoo/rnm_laplace_value")``), with ``broken`` (a positive control)
and ``twin`` (its correct counterpart) as entry metadata. The default namespace, and so
``dpharness list``, stays about real mechanisms.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any, Callable, ClassVar

import numpy as np

from dpharness.mechanisms import registry
from dpharness.mechanisms.base import check_epsilon, check_positive, check_size
from dpharness.verifiers.events import Event

__all__ = ["ZOO", "ZooEntry", "ZooWitness", "zoo_register"]

#: The registry namespace of the zoo.
ZOO = "zoo"


@dataclass(frozen=True)
class ZooEntry:
    """A zoo mechanism: its name, class, whether it is broken, its correct twin, a one-line summary."""

    name: str
    cls: type
    broken: bool
    twin: str | None
    summary: str
    structured: bool = False

    @classmethod
    def of(cls, e: registry.Entry) -> "ZooEntry":
        return cls(e.name, e.cls, bool(e.meta.get("broken", False)), e.meta.get("twin"), e.summary,
                   bool(e.meta.get("structured", False)))


def zoo_register(name: str, *, broken: bool, twin: str | None = None,
                 structured: bool = False) -> Callable[[type], type]:
    """Class decorator: register a zoo mechanism (``broken`` = positive control) with its correct twin,
    as ``zoo/<name>`` in :mod:`mechanisms.registry`. ``structured``: vector outputs or record-level
    units (:mod:`verifiers.zoo.vectors`), audited statistically; the scalar entries also have
    computed power bounds (:mod:`verifiers.power`)."""
    if name in registry.available(ZOO):
        raise ValueError(f"zoo name {name!r} already registered")
    return registry.register(name, namespace=ZOO, broken=bool(broken), twin=twin, structured=bool(structured))


@dataclass(frozen=True, eq=False)
class ZooWitness:
    """A documented witness: ``P[M(d1) in event] = p_d1``, ``P[M(d2) in event] = p_d2``; the bound
    is on the ratio in ``direction`` ("d1>d2": p_d1/p_d2)."""

    d1: Any
    d2: Any
    event: Event
    direction: str
    p_d1: float
    p_d2: float

    @property
    def p_num(self) -> float:
        return self.p_d1 if self.direction == "d1>d2" else self.p_d2

    @property
    def p_den(self) -> float:
        return self.p_d2 if self.direction == "d1>d2" else self.p_d1

    @property
    def loss(self) -> float:
        """ln(p_num/p_den): the pair's privacy loss on this event (inf for support events)."""
        return math.inf if self.p_den == 0 else math.log(self.p_num / self.p_den)


class _Base:
    name: ClassVar[str] = ""
    kind: ClassVar[str] = "real"

    def params(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}  # type: ignore[arg-type]


def _n(size: Any) -> tuple[tuple[int, ...], int]:
    shape = check_size(size)
    return shape, (int(np.prod(shape)) if shape else 1)


def _shape(x: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    return x.reshape(shape) if shape else x[0]


def _scalar(data: Any, name: str = "data") -> float:
    a = np.asarray(data, dtype=np.float64)
    if a.size != 1 or not np.isfinite(a).all():
        raise ValueError(f"{name} must be one finite number (the query answer f(D)), got {data!r}")
    return float(a.reshape(()))


def _lap_cdf(x: np.ndarray) -> np.ndarray:
    return np.where(x < 0, 0.5 * np.exp(np.minimum(x, 0)), 1 - 0.5 * np.exp(-np.maximum(x, 0)))


def _exp_cdf(x: np.ndarray) -> np.ndarray:
    return np.where(x < 0, 0.0, -np.expm1(-np.maximum(x, 0)))


def _check_rnm(self: Any) -> None:
    check_epsilon(self.epsilon)
    check_positive(self.sensitivity, "sensitivity")
