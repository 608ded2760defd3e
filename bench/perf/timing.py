"""The paired-ratio measurement machinery: timed calls, probing, repetitions, per-rep ratios.

Absolute times on a shared machine are noise, so every number that matters is a *ratio* computed
pairwise inside one repetition: in each repetition the floor and the implementation are timed
back to back on the same input, the ratio of that pair is kept, and the reported ratio is the
median of those per-repetition ratios (min/max kept too). Short calls are looped until one timing
lasts ``min_timing`` seconds (as ``timeit`` does); slow ones are timed at a smaller size and
extrapolated linearly.
"""

from __future__ import annotations

import gc
import math
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from dpharness.bench.perf.plan import Plan

__all__ = ["Impl", "grant_repeats", "pair_ratios", "probe", "run_reps", "stats", "timed"]


def timed(fn: Callable[[], Any]) -> float:
    """Seconds of one call, garbage collector off (as timeit does) so its pauses are not billed.

    (A full ``gc.collect()`` costs ~70 ms once scipy and the peers are imported, so it runs once
    per repetition in :func:`run_reps`, not before every call.)
    """
    gc.disable()
    try:
        t0 = time.perf_counter()
        fn()
        return time.perf_counter() - t0
    finally:
        gc.enable()


def stats(values: Sequence[float]) -> tuple[float | None, float | None, float | None]:
    """(median, min, max) of ``values``; ``(None, None, None)`` when there are none."""
    if not values:
        return None, None, None
    return float(statistics.median(values)), float(min(values)), float(max(values))


@dataclass
class Impl:
    """An implementation under test; ``fn(size)`` produces ``size`` releases (or the floor's work)."""

    name: str
    kind: str  # "floor" | "dpharness" | "peer"
    fn: Callable[[int], Any]
    size: int  # releases per call wanted (target)
    note: str = ""
    measured_size: int = 0  # releases per timed call actually run (<= size)
    inner: int = 1  # calls per timing (short calls are looped so the clock can resolve them)
    repeats: int = 0  # repetitions granted
    predicted: float | None = None  # predicted seconds of one timed call
    times: dict[int, float] = field(default_factory=dict)  # rep -> seconds, scaled to `size`
    floor_times: dict[str, dict[int, float]] = field(default_factory=dict)  # floor -> rep -> s

    def call(self) -> float:
        """One timed call at ``measured_size``; returns seconds extrapolated to ``size``."""
        m, k = self.measured_size, self.inner

        def block() -> None:
            for _ in range(k):
                self.fn(m)

        return timed(block) / k * self.size / m

    def set_inner(self, seconds_per_call: float, min_timing: float) -> None:
        self.inner = max(1, min(1000, math.ceil(min_timing / max(seconds_per_call, 1e-7))))


def probe(impl: Impl, start: int, budget: float, max_call: float) -> str | None:
    """Warm up ``impl`` and choose ``measured_size`` so that one timed call fits ``budget``.

    Starts at ``start`` releases (the warm-up) and doubles (or jumps) while the call is short,
    so the per-release cost is estimated from a call long enough to be timed. Sets
    ``measured_size`` and ``predicted``; returns a skip reason, or ``None``.
    """
    s = max(1, min(start, impl.size))
    while True:
        try:
            t = timed(lambda: impl.fn(s))
        except Exception as exc:  # a broken implementation is a finding, not a crash
            return f"error: {type(exc).__name__}: {exc}"
        per = max(t, 1e-9) / s
        if s >= impl.size or t >= budget / 4:
            break
        s = min(impl.size, max(s * 2, int(budget / 4 / per)))
    impl.measured_size = max(1, min(impl.size, int(budget / per)))
    impl.predicted = per * impl.measured_size
    if per > max_call:
        return f"one release takes {per:.0f} s, over the {max_call:.0f} s limit"
    return None


def grant_repeats(impl: Impl, plan: Plan, repeats: int) -> None:
    """Repetitions for ``impl``: ``repeats``, fewer when its predicted time would exceed
    ``plan.peer_budget`` (never below 1 for a peer, ``plan.min_repeats`` for the others)."""
    pred = impl.predicted or 0.0
    floor_reps = 1 if impl.kind == "peer" else min(repeats, plan.min_repeats)
    if pred <= 0:
        impl.repeats = repeats
    else:
        impl.repeats = int(min(repeats, max(floor_reps, plan.peer_budget // pred)))


def run_reps(floors: list[Impl], impls: list[Impl], repeats: int,
             after: Callable[[Impl], None] | None = None) -> None:
    """Each repetition: for every implementation, time every floor then it, back to back.

    With nothing to compare (every implementation skipped) the floors are still timed, so the
    floor lines of the table and figure exist on a bare install. ``after(impl)`` runs untimed
    after each implementation's call (the median section checks the input was not modified).
    """
    for rep in range(repeats):
        gc.collect()
        if not any(rep < impl.repeats for impl in impls):
            for fl in floors:
                fl.times[len(fl.times)] = fl.call()
        for impl in impls:
            if rep >= impl.repeats:
                continue
            for fl in floors:
                t = fl.call()
                fl.times[len(fl.times)] = t
                impl.floor_times.setdefault(fl.name, {})[rep] = t
            impl.times[rep] = impl.call()
            if after is not None:
                after(impl)


def pair_ratios(a: dict[int, float], b: dict[int, float]) -> list[float]:
    """``a[r] / b[r]`` for every repetition ``r`` timed in both (unpaired ones are dropped)."""
    return [a[r] / b[r] for r in sorted(a) if r in b and b[r] > 0]
