"""Google python-dp: the one way dpharness builds its median (benchmarks and audits alike).

``algorithms.laplacian.Median(epsilon, lower_bound, upper_bound, dtype="float")`` -- a noisy
binary search with Laplace counts (not an exponential mechanism), claimed epsilon-DP under
add/remove. One fresh object per release (an object may only be used once), fed a Python list:
the list conversion is done once per call of ``sample`` and is part of a timed call. python-dp
draws from the operating system and cannot be seeded.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dpharness.bench.peers import require, version
from dpharness.bench.peers._common import PeerSampler, quiet

__all__ = ["DIST", "median"]

DIST = "python-dp"


def median(lower: float, upper: float, epsilon: float) -> PeerSampler:
    """``pydp.algorithms.laplacian.Median`` on data in ``[lower, upper]`` at ``epsilon`` (add/remove)."""
    lap = require("pydp.algorithms.laplacian", DIST)

    def sample(x: Any, draws: int, rng: np.random.Generator) -> np.ndarray:
        values = np.asarray(x, dtype=float).tolist()  # python-dp takes a list: part of its cost
        out = np.empty(draws)
        for i in range(draws):
            m = lap.Median(epsilon=epsilon, lower_bound=lower, upper_bound=upper, dtype="float")
            out[i] = m.quick_result(values)
        return out

    return PeerSampler("pydp.laplacian.Median", f"python-dp {version(DIST)}", quiet(sample), float(epsilon),
                       "list conversion included; noisy binary search (not EM); unseedable")
