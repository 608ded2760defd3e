"""What one benchmark run measures: sections, sizes, repeats and time budgets (:class:`Plan`).

``full_plan()`` is the full protocol (n = 1e3..1e7, k = 10..1e5 at 1e6 draws, Table 1 at jobs 1
and 2); ``quick_plan()`` is the CI tier. A plan is checked when built, so a bad size or section
name is a :class:`BenchInputError` naming the field before anything is timed.
"""

from __future__ import annotations

import pathlib
from dataclasses import dataclass
from typing import Any

__all__ = ["ROOT", "SECTIONS", "DEFAULT_SECTIONS", "BenchInputError", "Plan", "full_plan", "quick_plan"]

SECTIONS = ("median", "finite", "table1", "verifier", "draws")
#: what runs without ``--only``: ``draws`` times minutes of a slow black box and runs when named
DEFAULT_SECTIONS = ("median", "finite", "table1", "verifier")
#: the checkout: ``table1_config`` is resolved against it when run from elsewhere
ROOT = pathlib.Path(__file__).resolve().parents[2]


class BenchInputError(ValueError):
    """A benchmark argument that cannot work (bad plan field, unwritable output); the message
    names the argument and what would be valid. The CLI prints it and exits 2."""


@dataclass(frozen=True)
class Plan:
    """Sizes, repeats and time budgets of one benchmark run.

    ``budget`` caps the seconds of one timed call of a finite/verifier implementation (larger
    jobs are timed at a smaller size and extrapolated); ``peer_budget`` caps the total seconds
    spent repeating one slow implementation at one n (repeats are reduced, never below 1 for a
    peer or ``min_repeats`` for dpharness); ``max_call`` skips a call predicted to take longer.
    """

    quick: bool = False
    sections: tuple[str, ...] = DEFAULT_SECTIONS
    seed: int = 20240917
    repeats: int = 9  # median section; slow peers are capped by peer_budget
    min_repeats: int = 3
    min_timing: float = 0.02  # a timing shorter than this loops over several calls (timeit-style)
    lower: float = -10.0
    upper: float = 10.0
    epsilon: float = 1.0
    median_ns: tuple[int, ...] = (10**3, 10**4, 10**5, 10**6, 10**7)
    median_draws: int = 100
    ss_delta: float = 1e-3
    opendp_grid_step: float = 1e-3
    finite_ks: tuple[int, ...] = (10, 10**3, 10**5)
    finite_size: int = 10**6
    finite_repeats: int = 3
    peer_draws: int = 300
    budget: float = 1.5
    peer_budget: float = 40.0
    max_call: float = 300.0
    table1_config: str = "configs/duff_table1.yaml"
    table1_jobs: tuple[int, ...] = (1, 2)
    table1_repeats: int = 1
    #: extra top-level overrides for the Table 1 config (quick: a few datasets, so the timing is
    #: mostly the runner's own cost, worker start-up included); empty = the config as written.
    table1_overrides: tuple[tuple[str, Any], ...] = ()
    #: warm up at every --jobs value (False: only at the largest, which warms the main process
    #: and the worker pool together -- the quick tier's saving)
    table1_warm_each: bool = True
    verifier_samples: tuple[int, ...] = (10**5, 10**6)
    verifier_mechanisms: tuple[str, ...] = ("exponential", "duff_median")
    alpha: float = 0.05
    #: the draws section: draws per dataset of one audit of a black box costing draws_call_seconds
    #: per release, timed at each of draws_jobs workers (the floor: jobs=1)
    draws_per_dataset: int = 200_000
    draws_call_seconds: float = 0.002
    draws_jobs: tuple[int, ...] = (2,)
    draws_repeats: int = 1

    def __post_init__(self) -> None:
        if not self.sections or not set(self.sections) <= set(SECTIONS):
            bad = [s for s in self.sections if s not in SECTIONS]
            raise BenchInputError(f"Plan.sections: {bad or 'empty'} -- valid sections: {', '.join(SECTIONS)}")
        for name in ("repeats", "min_repeats", "median_draws", "finite_size", "finite_repeats", "peer_draws",
                     "table1_repeats", "draws_per_dataset", "draws_repeats"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise BenchInputError(f"Plan.{name} must be an integer >= 1, got {v!r}")
        for name in ("median_ns", "finite_ks", "verifier_samples", "table1_jobs", "draws_jobs"):
            v = getattr(self, name)
            if not v or any(isinstance(x, bool) or not isinstance(x, int) or x < 1 for x in v):
                raise BenchInputError(f"Plan.{name} must be a non-empty tuple of integers >= 1, got {v!r}")
        for name in ("min_timing", "budget", "peer_budget", "max_call", "epsilon", "draws_call_seconds"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and v > 0):
                raise BenchInputError(f"Plan.{name} must be a number > 0, got {v!r}")
        if not self.lower < self.upper:
            raise BenchInputError(f"Plan.lower < Plan.upper required, got [{self.lower}, {self.upper}]")


def full_plan() -> Plan:
    """The full protocol's sizes: n = 1e3..1e7, k = 10..1e5 at 1e6 draws, Table 1 at jobs 1 and 2.

    Table 1 is repeated 3 times (a run takes ~1-3 s; one run on a shared machine is noise).
    """
    return Plan(table1_repeats=3)


def quick_plan() -> Plan:
    """The CI tier: tiny sizes, a few repeats, Table 1 with its ``quick:`` overrides."""
    return Plan(
        quick=True, repeats=3, min_repeats=2, median_ns=(10**3, 10**4), median_draws=100,
        finite_ks=(10, 100), finite_size=10**4, finite_repeats=2, peer_draws=20,
        budget=0.2, peer_budget=1.0, max_call=10.0, verifier_samples=(10**3, 10**4), min_timing=0.005,
        table1_overrides=(("datasets", 4), ("draws", 20)), table1_warm_each=False, draws_per_dataset=1000,
    )
