"""OpenDP: the one way dpharness builds its measurements (benchmarks and audits alike).

* ``make_private_quantile`` (alpha = 0.5) -- the exponential mechanism over a user-supplied
  candidate grid, symmetric distance (add/remove), ``max_divergence``; scale = 1/epsilon. The grid
  is ``lower + step * i`` for ``i = 0 .. round((upper - lower) / step)`` (integer multiples, so the
  candidates do not drift as ``np.arange`` accumulations do).
* ``make_noisy_max`` with ``max_divergence`` -- permute-and-flip (exponential noise) over a score
  vector with ``linf`` distance; scale = 2 * sensitivity / epsilon (docs/peer-libraries.md).

The epsilon of a sampler is the measurement's own ``map`` of the input distance (1 record, or
``sensitivity``). OpenDP draws from the operating system and cannot be seeded: its timings are
fine, its verdicts valid, but not bit-reproducible. Inputs are copied into a writable float array
(OpenDP rejects read-only arrays); the copy is part of a timed call, as it would be for a user.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dpharness.bench.peers import require, version
from dpharness.bench.peers._common import PeerSampler, quiet

__all__ = ["DIST", "quantile_grid", "quantile", "noisy_max"]

DIST = "opendp"


def _dp() -> Any:
    dp = require("opendp.prelude", DIST)
    dp.enable_features("contrib")
    return dp


def quantile_grid(lower: float, upper: float, step: float) -> list[float]:
    """Candidates ``lower + step * i``, i = 0 .. round((upper - lower) / step)."""
    count = int(round((upper - lower) / step))
    return (lower + step * np.arange(count + 1)).tolist()


def quantile(lower: float, upper: float, epsilon: float, step: float = 1e-3) -> PeerSampler:
    """The median by ``make_private_quantile`` over :func:`quantile_grid` at ``epsilon`` (add/remove)."""
    dp = _dp()
    grid = quantile_grid(lower, upper, step)
    meas = dp.m.make_private_quantile(
        dp.vector_domain(dp.atom_domain(T=float, nan=False)),
        dp.symmetric_distance(),
        dp.max_divergence(),
        candidates=grid,
        alpha=0.5,
        scale=1.0 / epsilon,  # add/remove: epsilon = 1/scale (docs/peer-libraries.md)
    )

    def sample(x: Any, draws: int, rng: np.random.Generator) -> np.ndarray:
        data = np.array(x, dtype=float)  # a writable copy: OpenDP rejects read-only arrays
        return np.array([meas(data) for _ in range(draws)], dtype=float)

    return PeerSampler("opendp.make_private_quantile", f"opendp {version(DIST)}", quiet(sample), float(meas.map(1)),
                       f"grid step {step:g} ({len(grid)} candidates); unseedable")


def noisy_max(epsilon: float, sensitivity: float = 1.0) -> PeerSampler:
    """``make_noisy_max`` (permute-and-flip, exponential noise) at ``epsilon`` for scores of
    ``linf`` sensitivity ``sensitivity``."""
    dp = _dp()
    meas = dp.m.make_noisy_max(
        dp.vector_domain(dp.atom_domain(T=float, nan=False)),
        dp.linf_distance(T=float),
        dp.max_divergence(),
        scale=2.0 * sensitivity / epsilon,
    )

    def sample(scores: Any, draws: int, rng: np.random.Generator) -> np.ndarray:
        s = np.array(scores, dtype=float)  # a writable copy: OpenDP rejects read-only arrays
        return np.array([meas(s) for _ in range(draws)], dtype=np.int64)

    return PeerSampler("opendp.make_noisy_max", f"opendp {version(DIST)}", quiet(sample),
                       float(meas.map(float(sensitivity))),
                       "permute-and-flip (exponential noise); one draw per call; unseedable")
