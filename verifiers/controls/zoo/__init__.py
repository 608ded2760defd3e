"""The zoo: deliberately broken mechanisms (positive controls) and their correct twins.

A verifier that flags none of these is indistinguishable from a broken one; one that flags a
correct twin is wrong (docs/auditing.md, "The zoo"). Each entry is a self-contained frozen dataclass
following the mechanism contract (``claim``, ``sample(data, size, rng)``, ``example()``, and an
exact law where it is easy: ``support``/``log_prob`` or ``distribution``), plus

* ``true_epsilon`` -- the mechanism's real worst-case epsilon (``inf`` for support bugs; for correct
  twins the claim, an upper bound that is attained where the docstring says "tight");
* ``witness()`` -- a documented :class:`ZooWitness`: a legal pair, an event, its direction and
  the event's exact probabilities under both datasets (used for power computations).

(:class:`mechanisms.contracts.KnownLoss` is that contract.) The entries live in three modules --
:mod:`verifiers.zoo.finite` (index outputs), :mod:`verifiers.zoo.real` (real outputs),
:mod:`verifiers.zoo.medians` (private medians), :mod:`verifiers.zoo.vectors` (vector outputs and
record-level units) and :mod:`verifiers.zoo.selection` (JointExp and top-k selection; these two are
the ``structured`` entries) -- and are registered in the one mechanism
registry under the namespace ``zoo`` (``mechanisms.make("zoo/em_missing_half")`` works too), so
that the default namespace and ``dpharness list`` stay about real mechanisms. This module is the
zoo's API: :func:`make`, :func:`available`, :func:`get`, :func:`entries`, and every entry class.
"""

from __future__ import annotations

from typing import Any

from dpharness.mechanisms import registry
from dpharness.verifiers.controls.zoo.base import ZOO, ZooEntry, ZooWitness, zoo_register
from dpharness.verifiers.controls.zoo.finite import (ZooEM, ZooEMMissingHalf, ZooPermuteAndFlip, ZooRNMExponential, ZooRNMLaplace,
                         ZooRNMMonotoneScale, ZooRNMSharedNoise, rnm_index_log_prob)
from dpharness.verifiers.controls.zoo.medians import ZooDuffMedian, ZooSSMedian, ZooSSMedianBigBeta, ZooSSMedianLocal
from dpharness.verifiers.controls.zoo.real import ZooLaplace, ZooLaplaceInvertedScale, ZooRNMExponentialValue, ZooRNMLaplaceValue
from dpharness.verifiers.controls.zoo.vectors import (ZooNoisyHistogram, ZooNoisyHistogramHalfNoise, ZooTopKGumbel, ZooTopKTop1Scale,
                          ZooUserCount, ZooUserCountOneRecord)
from dpharness.verifiers.controls.zoo.selection import (ZooJointExp, ZooJointExpSingleSensitivity, ZooTopKLaplace, ZooTopKLaplaceTop1Scale,
                            ZooTopKPeelingEM, ZooTopKPeelingReusedUniform)

__all__ = ["ZOO", "ZooEntry", "ZooWitness", "zoo_register", "make", "available", "get", "entries",
           "rnm_index_log_prob",
           "ZooLaplace", "ZooLaplaceInvertedScale", "ZooRNMLaplace", "ZooRNMMonotoneScale", "ZooRNMExponential",
           "ZooRNMSharedNoise", "ZooPermuteAndFlip", "ZooRNMLaplaceValue", "ZooRNMExponentialValue", "ZooEM",
           "ZooEMMissingHalf", "ZooDuffMedian", "ZooSSMedian", "ZooSSMedianLocal", "ZooSSMedianBigBeta",
           "ZooNoisyHistogram", "ZooNoisyHistogramHalfNoise", "ZooUserCount", "ZooUserCountOneRecord",
           "ZooTopKGumbel", "ZooTopKTop1Scale", "ZooJointExp", "ZooJointExpSingleSensitivity", "ZooTopKPeelingEM",
           "ZooTopKPeelingReusedUniform", "ZooTopKLaplace", "ZooTopKLaplaceTop1Scale"]


def available(broken: bool | None = None, structured: bool | None = None) -> list[str]:
    """Zoo names (all, or only broken / only correct ones; only structured-output / only scalar ones)."""
    return [e.name for e in entries() if (broken is None or e.broken == broken)
            and (structured is None or e.structured == structured)]


def get(name: str) -> ZooEntry:
    """The :class:`ZooEntry` of ``name`` (plain, or ``"zoo/name"``); ``ValueError`` listing the names."""
    return ZooEntry.of(registry.entry(name, ZOO))


def make(name: str, **params: Any) -> Any:
    """Build zoo mechanism ``name`` (defaults are the documented instance)."""
    return registry.make(name, namespace=ZOO, **params)


def entries() -> list[ZooEntry]:
    """Every zoo entry, sorted by name."""
    return [ZooEntry.of(e) for e in registry.entries(ZOO)]
