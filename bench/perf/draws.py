"""The ``draws`` section: one audit of a slow black box (``draws_call_seconds`` of CPU per release,
as a library call costs) with its draws on 1 and on more workers.

The floor is the same audit with ``jobs=1`` (keyed chunks in this process); each row ``jobs=N``
carries ``ratio_to_floor`` = its seconds / the floor's, so the speed-up is ``1 / ratio``. The
verdicts of every ``jobs`` are checked to be the same (the chunked draws do not depend on it); a
difference is a note, not a timing. ``n`` is the draws per dataset.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from dpharness.bench.perf.plan import Plan
from dpharness.bench.perf.rows import Report, floor_row
from dpharness.bench.perf.timing import Impl, stats

__all__ = ["bench_draws", "slow_box"]


def slow_box(data: Any, size: int, rng: np.random.Generator, seconds: float = 0.002) -> np.ndarray:
    """``size`` Laplace releases of ``data`` (scale 1), each after ``seconds`` of busy CPU: a
    black box as slow as one library call. Module level, so the workers import it by reference."""
    out = float(data) + rng.laplace(0.0, 1.0, size=size)
    for _ in range(size):
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:  # busy, not asleep: a library call holds its core
            pass
    return out


def _mechanism(seconds: float) -> Any:
    import functools

    from dpharness.verifiers.wrap import wrap

    return wrap(functools.partial(slow_box, seconds=seconds), epsilon=1.0, neighbours="value", sensitivity=1.0,
                kind="real", name="slow black box")


def bench_draws(plan: Plan, report: Report) -> None:
    """Seconds of one audit of the slow box at ``plan.draws_per_dataset`` per dataset, per ``jobs``."""
    from dpharness import verifiers

    mech, n = _mechanism(plan.draws_call_seconds), plan.draws_per_dataset
    verdicts: dict[int, tuple] = {}

    def run(jobs: int) -> float:
        t0 = time.perf_counter()
        v = verifiers.audit(mech, 0.0, 1.0, samples=n, alpha=plan.alpha, rng=plan.seed, jobs=jobs)
        verdicts[jobs] = (v.epsilon_lower, str(v.witness) if v.witness else None)
        return time.perf_counter() - t0

    impls = {j: Impl(f"audit[slow box {plan.draws_call_seconds * 1e3:g} ms/call] jobs={j}",
                     "floor" if j == 1 else "dpharness", lambda size: None, size=n, measured_size=n)
             for j in sorted(set((1, *plan.draws_jobs)))}
    run(max(impls))  # start the worker pool once, untimed (its start-up is not the audit's cost)
    for rep in range(plan.draws_repeats):
        for j, impl in impls.items():
            impl.times[rep] = run(j)
    floor = impls[1]
    report.rows.append(floor_row("draws", n, floor))
    f_s = stats(list(floor.times.values()))[0]
    for j, impl in impls.items():
        if j == 1:
            continue
        s, smin, smax = stats(list(impl.times.values()))
        ratios = [impl.times[r] / floor.times[r] for r in impl.times]
        row = floor_row("draws", n, impl)
        row.update(kind="dpharness", floor=floor.name, floor_seconds=f_s, ratio_to_floor=float(np.median(ratios)),
                   ratio_to_floor_min=min(ratios), ratio_to_floor_max=max(ratios), ratio_to_floor_samples=ratios,
                   note=f"speed-up {1 / float(np.median(ratios)):.2f}x over jobs=1"
                        + ("" if verdicts[j] == verdicts[1] else "; VERDICT DIFFERS from jobs=1"))
        report.rows.append(row)
    report.measured("draws", n, [floor], [i for j, i in impls.items() if j != 1])
    report.step(f"draws n={n}")
