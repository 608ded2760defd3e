"""Other libraries' mechanisms, made auditable through :func:`verifiers.wrap` (optional extra).

Install with ``pip install -e '.[peers]'`` (diffprivlib, scikit-learn<1.9, opendp, python-dp).
Each builder imports its library lazily and returns a wrapped mechanism whose claim is the one the
library documents (peers.md); without the library it raises :class:`PeerUnavailable` carrying the
install hint. diffprivlib is seeded from our generator (``random_state``); OpenDP and python-dp
draw from the operating system and cannot be seeded, so their audits are not bit-reproducible
(the certified statement stays valid: it only needs independent draws).
"""

from __future__ import annotations

import warnings
from typing import Any, Callable

import numpy as np

from .wrap import WrappedMechanism, wrap

__all__ = ["PEERS", "PeerUnavailable", "build", "INSTALL_HINT"]

INSTALL_HINT = ("install the peers extra: pip install -e '.[peers]' "
                "(diffprivlib, scikit-learn<1.9, opendp, python-dp)")


class PeerUnavailable(RuntimeError):
    """The peer library is missing or broken; the message says how to install it."""


def _import(name: str) -> Any:
    import importlib

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return importlib.import_module(name)
    except Exception as exc:  # noqa: BLE001 - ImportError or a broken install (sklearn mismatch)
        raise PeerUnavailable(f"{name} is not usable ({type(exc).__name__}: {exc}); {INSTALL_HINT}") from None


def _seeds(rng: np.random.Generator, n: int) -> np.ndarray:
    return rng.integers(0, 2**31 - 1, size=n)


def diffprivlib_exponential(epsilon: float = 1.0, sensitivity: float = 1.0, monotonic: bool = False) -> WrappedMechanism:
    """diffprivlib.mechanisms.Exponential over a score vector (data = utilities). Claim: epsilon-DP
    for utilities of the given sensitivity (score_linf; score_monotone when ``monotonic``)."""
    mech_mod = _import("diffprivlib.mechanisms")

    def fn(data: Any, n: int, rng: np.random.Generator) -> np.ndarray:
        u = [float(v) for v in np.asarray(data, dtype=np.float64)]
        rs = np.random.RandomState(int(_seeds(rng, 1)[0]))
        m = mech_mod.Exponential(epsilon=epsilon, sensitivity=sensitivity, utility=u, monotonic=monotonic, random_state=rs)
        return np.array([m.randomise() for _ in range(n)])

    return wrap(fn, epsilon=epsilon, neighbours="score_monotone" if monotonic else "score_linf", kind="finite",
                sensitivity=sensitivity, name="diffprivlib Exponential")


def diffprivlib_permute_and_flip(epsilon: float = 1.0, sensitivity: float = 1.0) -> WrappedMechanism:
    """diffprivlib.mechanisms.PermuteAndFlip over a score vector. Claim: epsilon-DP, score_linf."""
    mech_mod = _import("diffprivlib.mechanisms")

    def fn(data: Any, n: int, rng: np.random.Generator) -> np.ndarray:
        u = [float(v) for v in np.asarray(data, dtype=np.float64)]
        rs = np.random.RandomState(int(_seeds(rng, 1)[0]))
        m = mech_mod.PermuteAndFlip(epsilon=epsilon, sensitivity=sensitivity, utility=u, monotonic=False, random_state=rs)
        return np.array([m.randomise() for _ in range(n)])

    return wrap(fn, epsilon=epsilon, neighbours="score_linf", kind="finite", sensitivity=sensitivity,
                name="diffprivlib PermuteAndFlip")


def diffprivlib_median(epsilon: float = 1.0, lower: float = 0.0, upper: float = 10.0,
                       neighbours: str = "add_remove") -> WrappedMechanism:
    """diffprivlib.tools.median(x, epsilon, bounds=(lower, upper)) at its nominal epsilon, audited
    under the relation given (peers.md: it is calibrated for replace-one; under add/remove it
    equals the Duff set-definition EM at epsilon/2)."""
    tools = _import("diffprivlib.tools")

    def fn(data: Any, n: int, rng: np.random.Generator) -> np.ndarray:
        x = np.asarray(data, dtype=np.float64)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return np.array([tools.median(x, epsilon=epsilon, bounds=(lower, upper), random_state=int(s))
                             for s in _seeds(rng, n)])

    return wrap(fn, epsilon=epsilon, neighbours=neighbours, kind="real", name="diffprivlib median",
                attributes={"lower": float(lower), "upper": float(upper)})


def _opendp() -> Any:
    dp = _import("opendp.prelude")
    dp.enable_features("contrib")
    return dp


def opendp_noisy_max(epsilon: float = 1.0, sensitivity: float = 1.0) -> WrappedMechanism:
    """OpenDP make_noisy_max (max_divergence; scale 2 sensitivity/epsilon): permute-and-flip.
    Claim: the measurement's own map(sensitivity) (epsilon), score_linf."""
    dp = _opendp()
    meas = dp.m.make_noisy_max(dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.linf_distance(T=float),
                               dp.max_divergence(), scale=2.0 * sensitivity / epsilon)
    eps = float(meas.map(float(sensitivity)))

    def fn(data: Any, n: int, rng: np.random.Generator) -> np.ndarray:
        u = [float(v) for v in np.asarray(data, dtype=np.float64)]
        return np.array([meas(u) for _ in range(n)])

    return wrap(fn, epsilon=eps, neighbours="score_linf", kind="finite", sensitivity=sensitivity,
                name="OpenDP noisy_max")


def opendp_quantile(epsilon: float = 1.0, lower: float = 0.0, upper: float = 10.0, step: float = 0.5) -> WrappedMechanism:
    """OpenDP make_private_quantile (median, candidates lower:step:upper, scale 1/epsilon),
    symmetric distance = add/remove. Claim: the measurement's own map(1)."""
    dp = _opendp()
    cands = [float(c) for c in np.arange(lower, upper + step / 2, step)]
    meas = dp.m.make_private_quantile(dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.symmetric_distance(),
                                      dp.max_divergence(), candidates=cands, alpha=0.5, scale=1.0 / epsilon)
    eps = float(meas.map(1))

    def fn(data: Any, n: int, rng: np.random.Generator) -> np.ndarray:
        x = [float(v) for v in np.asarray(data, dtype=np.float64)]
        return np.array([meas(x) for _ in range(n)])

    return wrap(fn, epsilon=eps, neighbours="add_remove", kind="finite", name="OpenDP private_quantile",
                attributes={"lower": float(lower), "upper": float(upper)})


def pydp_median(epsilon: float = 1.0, lower: float = 0.0, upper: float = 10.0) -> WrappedMechanism:
    """Google python-dp laplacian.Median (noisy binary search), claim epsilon-DP add/remove."""
    lap = _import("pydp.algorithms.laplacian")

    def fn(data: Any, n: int, rng: np.random.Generator) -> np.ndarray:
        x = [float(v) for v in np.asarray(data, dtype=np.float64)]
        return np.array([lap.Median(epsilon=epsilon, lower_bound=lower, upper_bound=upper, dtype="float").quick_result(x)
                         for _ in range(n)])

    return wrap(fn, epsilon=epsilon, neighbours="add_remove", kind="real", name="python-dp Median",
                attributes={"lower": float(lower), "upper": float(upper)})


PEERS: dict[str, Callable[..., WrappedMechanism]] = {
    "diffprivlib_exponential": diffprivlib_exponential,
    "diffprivlib_permute_and_flip": diffprivlib_permute_and_flip,
    "diffprivlib_median": diffprivlib_median,
    "opendp_noisy_max": opendp_noisy_max,
    "opendp_quantile": opendp_quantile,
    "pydp_median": pydp_median,
}


def build(name: str, **params: Any) -> WrappedMechanism:
    """Build peer mechanism ``name`` (``PeerUnavailable`` when its library is missing)."""
    if name not in PEERS:
        raise ValueError(f"unknown peer mechanism {name!r}; accepted: {', '.join(PEERS)}")
    return PEERS[name](**params)
