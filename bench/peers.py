"""Thin wrappers around peer DP libraries, for side-by-side performance benchmarks.

The peers are an optional extra (``pip install -e '.[peers]'``): diffprivlib (IBM), OpenDP and
Google's python-dp. Nothing here is imported at module level: each builder imports its library
lazily and, when the library is missing or broken, returns a :class:`Skipped` carrying the reason
and the install hint instead of raising. Calls and semantics follow ``/work/shared/docs/peers.md``:

* diffprivlib ``tools.median(x, epsilon, bounds)`` -- continuous EM over gaps, replace-one
  calibration (under add/remove it is the Duff set-definition EM at epsilon/2);
  ``mechanisms.Exponential`` / ``PermuteAndFlip`` -- one draw per ``randomise()``.
* OpenDP ``make_private_quantile`` -- EM over a user-supplied candidate grid (add/remove,
  epsilon = 1/scale); ``make_noisy_max`` with ``max_divergence`` -- permute-and-flip (exponential
  noise), scale = 2 * sensitivity / epsilon.
* python-dp ``laplacian.Median(epsilon, lower, upper, dtype="float")`` -- noisy binary search with
  Laplace counts (not an EM); needs a Python list.

These wrappers exist to *time* the peers. OpenDP and python-dp draw from the operating system's
randomness and cannot be seeded; diffprivlib is given integer seeds drawn from our generator.
"""

from __future__ import annotations

import importlib
import warnings
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any, Callable

import numpy as np

__all__ = [
    "INSTALL_HINT",
    "PEER_PACKAGES",
    "PeerImpl",
    "Skipped",
    "peer_versions",
    "median_peers",
    "finite_peers",
]

#: How to get every peer (the ``peers`` extra of pyproject.toml).
INSTALL_HINT = (
    "install the peers extra: pip install -e '.[peers]' "
    "(diffprivlib, scikit-learn<1.9, opendp, python-dp)"
)

#: distribution name -> import name, for version reports.
PEER_PACKAGES: dict[str, str] = {
    "diffprivlib": "diffprivlib",
    "scikit-learn": "sklearn",
    "opendp": "opendp",
    "python-dp": "pydp",
}


@dataclass(frozen=True)
class PeerImpl:
    """One peer implementation ready to run.

    ``run(data, draws, rng)`` returns ``draws`` releases as an array, calling the peer once per
    release (peers release one value per call). ``note`` says anything the reader of a timing
    must know (input conversion included in the time, unseedable randomness, ...).
    """

    name: str
    library: str
    run: Callable[[Any, int, np.random.Generator], np.ndarray] = field(repr=False)
    note: str = ""


@dataclass(frozen=True)
class Skipped:
    """A peer that could not be used, with the reason (and the install hint when it is missing)."""

    name: str
    reason: str

    def __str__(self) -> str:
        return f"{self.name}: skipped: {self.reason}"


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def peer_versions() -> dict[str, str | None]:
    """Installed versions of the peer packages (``None`` when not installed)."""
    return {dist: _version(dist) for dist in PEER_PACKAGES}


def _import(module: str, dist: str) -> tuple[Any, str | None]:
    """Import ``module`` quietly; return ``(module, None)`` or ``(None, reason)``."""
    try:
        with warnings.catch_warnings():
            # Peers may emit Deprecation/Future warnings on import; the test suite runs with
            # warnings as errors, and a peer's own warnings are not ours to fix.
            warnings.simplefilter("ignore")
            return importlib.import_module(module), None
    except ImportError as exc:
        if _version(dist) is None:
            return None, f"{dist} is not installed ({exc}); {INSTALL_HINT}"
        hint = " (diffprivlib 0.6.6 needs scikit-learn<1.9)" if dist == "diffprivlib" else ""
        return None, f"{dist} {_version(dist)} is installed but fails to import: {exc}{hint}; {INSTALL_HINT}"
    except Exception as exc:  # a broken peer must not stop the benchmark
        return None, f"{dist} fails to import: {type(exc).__name__}: {exc}; {INSTALL_HINT}"


def _quiet(fn: Callable[..., Any]) -> Callable[..., Any]:
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return fn(*args, **kwargs)

    return wrapped


def _seed(rng: np.random.Generator) -> int:
    return int(rng.integers(0, 2**31 - 1))


# ---------------------------------------------------------------------------------------------
# medians


def median_peers(
    lower: float, upper: float, epsilon: float, *, grid_step: float = 1e-3
) -> tuple[list[PeerImpl], list[Skipped]]:
    """Peer private medians of data on ``[lower, upper]`` at ``epsilon``.

    Parameters
    ----------
    lower, upper : float
        Data bounds given to every peer.
    epsilon : float
        Nominal epsilon passed to each peer (their neighbour relations differ; see peers.md).
    grid_step : float
        Spacing of OpenDP's candidate grid (it needs one; a coarse grid is an error floor).

    Returns
    -------
    (peers, skipped)
    """
    peers: list[PeerImpl] = []
    skipped: list[Skipped] = []

    # diffprivlib tools.median
    name = "diffprivlib.tools.median"
    tools, why = _import("diffprivlib.tools", "diffprivlib")
    if tools is None:
        skipped.append(Skipped(name, why or ""))
    else:
        from diffprivlib.accountant import BudgetAccountant

        def run_dpl(x: Any, draws: int, rng: np.random.Generator) -> np.ndarray:
            out = np.empty(draws)
            for i in range(draws):
                # A fresh accountant per call: the default global one would accumulate spends.
                out[i] = tools.median(x, epsilon=epsilon, bounds=(lower, upper),
                                      random_state=_seed(rng), accountant=BudgetAccountant())
            return out

        peers.append(PeerImpl(name, f"diffprivlib {_version('diffprivlib')}", _quiet(run_dpl),
                              "one release per call; replace-one calibration"))

    # OpenDP make_private_quantile over a grid
    name = "opendp.make_private_quantile"
    dp, why = _import("opendp.prelude", "opendp")
    if dp is None:
        skipped.append(Skipped(name, why or ""))
    else:
        try:
            dp.enable_features("contrib")
            count = int(round((upper - lower) / grid_step))
            grid = (lower + grid_step * np.arange(count + 1)).tolist()
            meas = dp.m.make_private_quantile(
                dp.vector_domain(dp.atom_domain(T=float, nan=False)),
                dp.symmetric_distance(),
                dp.max_divergence(),
                candidates=grid,
                alpha=0.5,
                scale=1.0 / epsilon,  # add/remove: epsilon = 1/scale (peers.md)
            )
        except Exception as exc:
            skipped.append(Skipped(name, f"could not build the measurement: {type(exc).__name__}: {exc}"))
        else:
            def run_odp(x: Any, draws: int, rng: np.random.Generator) -> np.ndarray:
                x = np.array(x, dtype=float)  # a writable copy: OpenDP rejects read-only arrays
                return np.array([meas(x) for _ in range(draws)], dtype=float)

            peers.append(PeerImpl(name, f"opendp {_version('opendp')}", _quiet(run_odp),
                                  f"grid step {grid_step:g} ({count + 1} candidates); unseedable"))

    # python-dp Median
    name = "pydp.laplacian.Median"
    lap, why = _import("pydp.algorithms.laplacian", "python-dp")
    if lap is None:
        skipped.append(Skipped(name, why or ""))
    else:
        def run_pydp(x: Any, draws: int, rng: np.random.Generator) -> np.ndarray:
            values = np.asarray(x, dtype=float).tolist()  # python-dp takes a list: part of its cost
            out = np.empty(draws)
            for i in range(draws):
                m = lap.Median(epsilon=epsilon, lower_bound=lower, upper_bound=upper, dtype="float")
                out[i] = m.quick_result(values)
            return out

        peers.append(PeerImpl(name, f"python-dp {_version('python-dp')}", _quiet(run_pydp),
                              "list conversion included; noisy binary search (not EM); unseedable"))
    return peers, skipped


# ---------------------------------------------------------------------------------------------
# finite-set selection


def finite_peers(epsilon: float, sensitivity: float) -> tuple[list[PeerImpl], list[Skipped]]:
    """Peer selection mechanisms over a score vector (one draw per call).

    ``run(scores, draws, rng)`` builds the peer's object once (as a user would) and then draws
    ``draws`` times, so set-up is amortised over the draws exactly as in a batched sampler.
    Names: ``diffprivlib.Exponential``, ``diffprivlib.PermuteAndFlip`` and
    ``opendp.make_noisy_max`` (permute-and-flip with exponential noise, pure DP).
    """
    peers: list[PeerImpl] = []
    skipped: list[Skipped] = []

    mechs, why = _import("diffprivlib.mechanisms", "diffprivlib")
    for cls_name in ("Exponential", "PermuteAndFlip"):
        name = f"diffprivlib.{cls_name}"
        if mechs is None:
            skipped.append(Skipped(name, why or ""))
            continue
        cls = getattr(mechs, cls_name)

        def run_dpl(scores: Any, draws: int, rng: np.random.Generator, cls: Any = cls) -> np.ndarray:
            utility = np.asarray(scores, dtype=float).tolist()  # diffprivlib wants a list
            mech = cls(epsilon=epsilon, sensitivity=sensitivity, utility=utility,
                       random_state=_seed(rng))
            return np.array([mech.randomise() for _ in range(draws)], dtype=np.int64)

        peers.append(PeerImpl(name, f"diffprivlib {_version('diffprivlib')}", _quiet(run_dpl),
                              "one draw per randomise() call"))

    name = "opendp.make_noisy_max"
    dp, why = _import("opendp.prelude", "opendp")
    if dp is None:
        skipped.append(Skipped(name, why or ""))
    else:
        try:
            dp.enable_features("contrib")
            meas = dp.m.make_noisy_max(
                dp.vector_domain(dp.atom_domain(T=float, nan=False)),
                dp.linf_distance(T=float),
                dp.max_divergence(),
                scale=2.0 * sensitivity / epsilon,
            )
        except Exception as exc:
            skipped.append(Skipped(name, f"could not build the measurement: {type(exc).__name__}: {exc}"))
        else:
            def run_odp(scores: Any, draws: int, rng: np.random.Generator) -> np.ndarray:
                s = np.array(scores, dtype=float)  # a writable copy: OpenDP rejects read-only arrays
                return np.array([meas(s) for _ in range(draws)], dtype=np.int64)

            peers.append(PeerImpl(name, f"opendp {_version('opendp')}", _quiet(run_odp),
                                  "permute-and-flip (exponential noise); one draw per call; unseedable"))
    return peers, skipped
