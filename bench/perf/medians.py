"""The ``median`` section: private medians against ``np.partition`` / ``np.sort`` and peers.

Median mechanisms (``duff_median``, ``smooth_sensitivity_median`` with Cauchy and with Laplace
noise, ``laplace_median_global``) run on one N(0, 1) dataset of n records, ``draws`` draws per
call. Peer medians (diffprivlib, OpenDP, python-dp) release one value per call, so
``ratio_to_peer`` compares our ``draws`` releases with *one* peer release -- the conservative
direction. The speed goal (within 2x of ``np.partition`` at n = 1e7) is judged in :mod:`.report`.
"""

from __future__ import annotations

import statistics
from typing import Any

import numpy as np

from dpharness.bench import peers as _peers
from dpharness.bench.perf.build import make_mechanism
from dpharness.bench.perf.plan import Plan
from dpharness.bench.perf.rows import Report, floor_row, rows_for
from dpharness.bench.perf.timing import Impl, grant_repeats, run_reps, stats, timed

__all__ = ["bench_medians", "median_data"]


def median_data(plan: Plan, n: int) -> np.ndarray:
    """The dataset of size ``n``: N(0, 1) from a stream keyed by (seed, n) only, so every
    implementation sees the same array."""
    return np.random.default_rng([plan.seed, 1, n]).normal(0.0, 1.0, n)


def _specs(plan: Plan) -> list[tuple[str, str, dict[str, Any]]]:
    lo, hi, eps = plan.lower, plan.upper, plan.epsilon
    return [
        ("duff_median", "duff_median", dict(lower=lo, upper=hi, epsilon=eps)),
        ("smooth_sensitivity_median[cauchy]", "smooth_sensitivity_median",
         dict(lower=lo, upper=hi, epsilon=eps, noise="cauchy")),
        (f"smooth_sensitivity_median[laplace,delta={plan.ss_delta:g}]", "smooth_sensitivity_median",
         dict(lower=lo, upper=hi, epsilon=eps, noise="laplace", delta=plan.ss_delta)),
        ("laplace_median_global", "laplace_median_global", dict(lower=lo, upper=hi, epsilon=eps)),
    ]


def bench_medians(plan: Plan, report: Report) -> None:
    """Median mechanisms vs np.partition / np.sort and peer medians at each n."""
    lo, hi, eps = plan.lower, plan.upper, plan.epsilon
    mechs: list[tuple[str, Any]] = []
    for label, reg, params in _specs(plan):
        m, why = make_mechanism(reg, **params)
        if m is None:
            report.skip("median", label, why or "")
        else:
            mechs.append((label, m))
    peer_impls, peer_skips = _peers.median_peers(lo, hi, eps, grid_step=plan.opendp_grid_step)
    for s in peer_skips:
        report.skip("median", s.name, s.reason)

    if peer_impls:
        report.notes.append(
            f"median: a dpharness timing is one call producing {plan.median_draws} draws; a peer timing is "
            "one call producing 1 release, so ratio_to_peer compares our "
            f"{plan.median_draws} releases with one of theirs (conservative: it favours the peer)")
    last: dict[str, tuple[int, float]] = {}  # name -> (n, seconds) for predicting the next n
    for n in plan.median_ns:
        x = median_data(plan, n)
        x_ref = x.copy()
        rng = np.random.default_rng([plan.seed, 2, n])

        def check_input(impl: Impl, x: np.ndarray = x, x_ref: np.ndarray = x_ref, n: int = n) -> None:
            # an implementation that sorts its input in place would hand the next one sorted data
            if not np.array_equal(x, x_ref):
                report.notes.append(f"median n={n}: {impl.name} modified its input array (restored)")
                x[:] = x_ref
        floors = [
            Impl("np.partition", "floor", lambda s, x=x: np.partition(x, n // 2), 1),
            Impl("np.sort", "floor", lambda s, x=x: np.sort(x), 1),
        ]
        impls: list[Impl] = []
        for label, m in mechs:
            impls.append(Impl(label, "dpharness",
                              lambda s, m=m: m.sample(x, size=s, rng=rng), plan.median_draws))
        peers = [
            Impl(p.name, "peer", lambda s, p=p: p.run(x, s, rng), 1, note=p.note) for p in peer_impls
        ]
        for fl in floors:
            fl.measured_size = 1
            timed(lambda fl=fl: fl.fn(1))  # warm-up
            fl.set_inner(timed(lambda fl=fl: fl.fn(1)), plan.min_timing)
        live: list[Impl] = []
        for impl in impls + peers:
            impl.measured_size = impl.size  # medians: never extrapolated
            prev = last.get(impl.name)
            # predict from the previous n (linear in n, +20 %) to skip the warm-up of slow calls
            guess = prev[1] * (n / prev[0]) * 1.2 if prev else 0.0
            if guess > plan.max_call:
                report.skip("median", impl.name,
                            f"n={n:g}: predicted {guess:.0f} s per call exceeds the {plan.max_call:.0f} s limit")
                continue
            if guess > plan.peer_budget / 2:
                impl.predicted = guess
                impl.note = "; ".join(x for x in (impl.note, "no warm-up at this n (warmed at smaller n)") if x)
            else:
                try:
                    impl.predicted = timed(lambda impl=impl: impl.fn(impl.size))
                    check_input(impl)
                    impl.set_inner(impl.predicted, plan.min_timing)
                    impl.predicted *= impl.inner
                except Exception as exc:  # an implementation (ours or a peer's) may fail in any way: the case is skipped with its error
                    report.skip("median", impl.name, f"n={n:g}: error: {type(exc).__name__}: {exc}")
                    continue
            grant_repeats(impl, plan, plan.repeats)
            live.append(impl)
        run_reps(floors, live, plan.repeats, after=check_input)
        for impl in live:
            if impl.times:
                last[impl.name] = (n, statistics.median(impl.times.values()))
        live_peers = [p for p in live if p.kind == "peer"]
        for fl in floors:
            report.rows.append(floor_row("median", n, fl))
            if fl.name == "np.sort":  # np.sort against np.partition, paired by repetition
                part = floors[0]
                ratios = [b / a for a, b in zip(part.times.values(), fl.times.values())]
                r, rmin, rmax = stats(ratios)
                report.rows[-1].update(floor="np.partition", floor_seconds=stats(list(part.times.values()))[0],
                                       ratio_to_floor=r, ratio_to_floor_min=rmin, ratio_to_floor_max=rmax,
                                       ratio_to_floor_samples=ratios)
        for impl in live:
            report.rows.extend(rows_for("median", n, impl, floors, live_peers))
        report.measured("median", n, floors, live)
        report.step(f"median n={n:g}")
