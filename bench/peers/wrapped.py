"""Peer mechanisms made auditable: each adapter's sampler wrapped with the claim its library
documents (docs/peer-libraries.md), for ``peer:`` mechanisms of audit configs (``dpharness audit``).

The samplers are the very ones the performance benchmark times (:mod:`bench.peers`), so what is
audited is what is timed. Claims: the measurement's own epsilon where the peer reports one
(OpenDP ``map``), else the epsilon passed in; neighbour relations as the libraries document them.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable

from dpharness.verifiers import WrappedMechanism, wrap

from dpharness.bench.peers import diffprivlib_, opendp_, pydp

__all__ = ["PEERS", "build", "parameters"]


def diffprivlib_exponential(epsilon: float = 1.0, sensitivity: float = 1.0, monotonic: bool = False) -> WrappedMechanism:
    """diffprivlib Exponential over a score vector (data = utilities); claim epsilon-DP for scores of
    the given sensitivity (``score_linf``; ``score_monotone`` when ``monotonic``)."""
    s = diffprivlib_.exponential(epsilon, sensitivity, monotonic)
    return wrap(s.sample, epsilon=s.epsilon, neighbours="score_monotone" if monotonic else "score_linf", kind="finite",
                sensitivity=sensitivity, name="diffprivlib Exponential")


def diffprivlib_permute_and_flip(epsilon: float = 1.0, sensitivity: float = 1.0) -> WrappedMechanism:
    """diffprivlib PermuteAndFlip over a score vector; claim epsilon-DP, ``score_linf``."""
    s = diffprivlib_.permute_and_flip(epsilon, sensitivity)
    return wrap(s.sample, epsilon=s.epsilon, neighbours="score_linf", kind="finite", sensitivity=sensitivity,
                name="diffprivlib PermuteAndFlip")


def diffprivlib_median(epsilon: float = 1.0, lower: float = 0.0, upper: float = 10.0,
                       neighbours: str = "add_remove") -> WrappedMechanism:
    """diffprivlib tools.median at its nominal epsilon, audited under ``neighbours`` (it is calibrated
    for replace-one; under add/remove it is the Duff set-definition EM at epsilon/2)."""
    s = diffprivlib_.median(lower, upper, epsilon)
    return wrap(s.sample, epsilon=s.epsilon, neighbours=neighbours, kind="real", name="diffprivlib median",
                attributes={"lower": float(lower), "upper": float(upper)})


def opendp_noisy_max(epsilon: float = 1.0, sensitivity: float = 1.0) -> WrappedMechanism:
    """OpenDP make_noisy_max (permute-and-flip); claim: the measurement's map(sensitivity), ``score_linf``."""
    s = opendp_.noisy_max(epsilon, sensitivity)
    return wrap(s.sample, epsilon=s.epsilon, neighbours="score_linf", kind="finite", sensitivity=sensitivity,
                name="OpenDP noisy_max")


def opendp_quantile(epsilon: float = 1.0, lower: float = 0.0, upper: float = 10.0, step: float = 0.5) -> WrappedMechanism:
    """OpenDP make_private_quantile (median over the grid lower:step:upper), add/remove; claim:
    the measurement's map(1)."""
    s = opendp_.quantile(lower, upper, epsilon, step)
    return wrap(s.sample, epsilon=s.epsilon, neighbours="add_remove", kind="finite", name="OpenDP private_quantile",
                attributes={"lower": float(lower), "upper": float(upper)})


def pydp_median(epsilon: float = 1.0, lower: float = 0.0, upper: float = 10.0) -> WrappedMechanism:
    """python-dp laplacian.Median (noisy binary search); claim epsilon-DP, add/remove."""
    s = pydp.median(lower, upper, epsilon)
    return wrap(s.sample, epsilon=s.epsilon, neighbours="add_remove", kind="real", name="python-dp Median",
                attributes={"lower": float(lower), "upper": float(upper)})


PEERS: dict[str, Callable[..., WrappedMechanism]] = {
    "diffprivlib_exponential": diffprivlib_exponential,
    "diffprivlib_permute_and_flip": diffprivlib_permute_and_flip,
    "diffprivlib_median": diffprivlib_median,
    "opendp_noisy_max": opendp_noisy_max,
    "opendp_quantile": opendp_quantile,
    "pydp_median": pydp_median,
}

#: The library (distribution) each auditable peer needs.
LIBRARY = {name: name.split("_")[0].replace("pydp", "python-dp") for name in PEERS}


def parameters(name: str) -> dict[str, Any]:
    """Parameters of peer ``name`` with their defaults (checked without importing the library)."""
    return {p.name: p.default for p in inspect.signature(PEERS[name]).parameters.values()}


def build(name: str, **params: Any) -> WrappedMechanism:
    """Build auditable peer ``name``: ``ValueError`` for an unknown name or parameter,
    ``PeerUnavailable`` when its library is missing."""
    if name not in PEERS:
        raise ValueError(f"unknown peer mechanism {name!r}; accepted: {', '.join(PEERS)}")
    unknown = sorted(set(params) - set(parameters(name)))
    if unknown:
        raise ValueError(f"{name}: unknown parameter(s) {', '.join(unknown)}; accepted: {', '.join(parameters(name))}")
    return PEERS[name](**params)
