"""The ``finite`` section: selection over k candidates against Gumbel-argmax / ``rng.choice``.

Each mechanism produces ``size`` draws per timed call on one fixed score vector per k (uniform on
[0, 10], sensitivity 1). Floors: ``rng.gumbel(size=(chunk, k)).argmax(axis=1)`` and
``rng.choice(k, size, p=p)``; peers draw once per call. Implementations too slow for ``size``
draws within the time budget are timed at a smaller ``measured_size`` and extrapolated linearly
(``extrapolated: true``).
"""

from __future__ import annotations

import statistics
import sys
from typing import Any

import numpy as np

from dpharness.bench import peers as _peers
from dpharness.bench.perf.build import make_mechanism
from dpharness.bench.perf.plan import Plan
from dpharness.bench.perf.rows import Report, floor_row, rows_for
from dpharness.bench.perf.timing import Impl, grant_repeats, probe, run_reps

__all__ = ["bench_finite", "finite_floors", "finite_specs"]


def finite_floors(k: int, size: int, log_p: np.ndarray, rng: np.random.Generator) -> list[Impl]:
    """The two physical floors of drawing ``size`` indices from the EM's log-weights ``log_p``."""
    chunk = max(1, min(size, 2**21 // k))  # bound the (chunk, k) noise matrix to ~16 MB

    def gumbel(s: int) -> np.ndarray:
        out = np.empty(s, dtype=np.int64)
        for start in range(0, s, chunk):
            stop = min(s, start + chunk)
            out[start:stop] = (log_p + rng.gumbel(size=(stop - start, k))).argmax(axis=1)
        return out

    def choice(s: int) -> np.ndarray:
        p = np.exp(log_p - log_p.max())  # normalising the EM's probabilities is part of the work
        return rng.choice(k, s, p=p / p.sum())

    return [
        Impl("gumbel_argmax", "floor", gumbel, size, note=f"chunks of {chunk} draws"),
        Impl("rng.choice", "floor", choice, size),
    ]


def finite_specs(eps: float) -> list[tuple[str, str, dict[str, Any]]]:
    """(label, registry name, parameters) of every finite mechanism, one report_noisy_max per
    noise the registry declares."""
    specs: list[tuple[str, str, dict[str, Any]]] = [
        ("exponential", "exponential", dict(epsilon=eps, sensitivity=1.0)),
        ("permute_and_flip", "permute_and_flip", dict(epsilon=eps, sensitivity=1.0)),
    ]
    noises: tuple[str, ...] = ("laplace", "gumbel", "exponential")
    try:
        from dpharness import mechanisms
        from dpharness.mechanisms.registry import parameters

        if "report_noisy_max" in mechanisms.available():
            cls = mechanisms.registry.get("report_noisy_max")
            declared = getattr(sys.modules.get(cls.__module__), "NOISES", None)  # mechanisms.finite
            if isinstance(declared, (tuple, list)) and declared:
                noises = tuple(declared)
            elif "noise" not in parameters("report_noisy_max"):
                noises = ()
    except Exception:  # a registry without this metadata: time the default noise only
        pass
    for noise in noises or ("",):
        params = dict(epsilon=eps, sensitivity=1.0)
        if noise:
            params["noise"] = noise
        specs.insert(-1, (f"report_noisy_max[{noise}]" if noise else "report_noisy_max",
                          "report_noisy_max", params))
    return specs


def bench_finite(plan: Plan, report: Report) -> None:
    """Selection mechanisms: draws/s over k candidates vs Gumbel-argmax / rng.choice and peers."""
    eps = plan.epsilon
    mechs: list[tuple[str, Any]] = []
    for label, reg, params in finite_specs(eps):
        m, why = make_mechanism(reg, **params)
        if m is None:
            report.skip("finite", label, why or "")
        else:
            mechs.append((label, m))
    peer_impls, peer_skips = _peers.finite_peers(eps, 1.0)
    for s in peer_skips:
        report.skip("finite", s.name, s.reason)

    report.notes.append(
        f"finite: seconds are for {plan.finite_size:g} draws; an implementation whose {plan.finite_size:g} draws "
        f"do not fit the {plan.budget:g} s budget per timing (peers: at most {plan.peer_draws} draws) is timed at "
        "measured_size draws and extrapolated linearly (marked 'from N' in the table)")
    for k in plan.finite_ks:
        # one fixed score vector per k: uniform on [0, 10], sensitivity 1, epsilon as planned
        scores = np.random.default_rng([plan.seed, 3, k]).uniform(0.0, 10.0, k)
        rng = np.random.default_rng([plan.seed, 4, k])
        log_p = eps * scores / 2.0  # the EM's log-weights (sensitivity 1)
        floors = finite_floors(k, plan.finite_size, log_p, rng)
        impls = [Impl(label, "dpharness", lambda s, m=m: m.sample(scores, size=s, rng=rng),
                      plan.finite_size) for label, m in mechs]
        peers = [Impl(p.name, "peer", lambda s, p=p: p.run(scores, s, rng), plan.finite_size,
                      note=f"{p.note}; timed over <= {plan.peer_draws} draws and extrapolated")
                 for p in peer_impls]
        for fl in floors:
            why = probe(fl, 100, plan.budget / 2, plan.max_call)
            if why:
                raise RuntimeError(f"floor {fl.name} failed at k={k}: {why}")
            fl.set_inner(fl.predicted or 0.0, plan.min_timing)
        live: list[Impl] = []
        for impl in impls + peers:
            if impl.kind == "peer":
                # per-draw peers: a few hundred draws at most, fewer when one draw is slow
                impl.size, full = min(plan.peer_draws, plan.finite_size), plan.finite_size
                why = probe(impl, 1, plan.budget, plan.max_call)
                impl.size = full
            else:
                why = probe(impl, 100, plan.budget, plan.max_call)
            if why:
                report.skip("finite", impl.name, f"k={k:g}: {why}")
                continue
            impl.set_inner(impl.predicted or 0.0, plan.min_timing)
            impl.predicted = (impl.predicted or 0.0) * impl.inner
            grant_repeats(impl, plan, plan.finite_repeats)
            live.append(impl)
        run_reps(floors, live, plan.finite_repeats)
        live_peers = [p for p in live if p.kind == "peer"]
        for fl in floors:
            report.rows.append(floor_row("finite", k, fl))
        for impl in live:
            report.rows.extend(rows_for("finite", k, impl, floors, live_peers,
                                        note=f"{impl.size / statistics.median(impl.times.values()):.3g} draws/s"))
        report.measured("finite", k, floors, live)
        report.step(f"finite k={k:g}")
