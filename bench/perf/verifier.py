"""The ``verifier`` section: samples per second through ``verifiers.audit`` and its overhead.

The floor is raw sampling of the same mechanism on the same neighbouring pair (both sides), so
``ratio_to_floor`` is the audit's overhead over the sampling it cannot avoid. ``n`` is the number
of samples per side.
"""

from __future__ import annotations

import statistics
from typing import Any

import numpy as np

from dpharness.bench.perf.plan import Plan
from dpharness.bench.perf.rows import Report, floor_row, rows_for
from dpharness.bench.perf.timing import Impl, grant_repeats, run_reps, timed

__all__ = ["bench_verifier", "neighbour"]


def neighbour(mech: Any, data: Any) -> np.ndarray:
    """A neighbouring dataset under the mechanism's declared relation (for timing only)."""
    d = np.asarray(data, dtype=float)
    rel = mech.claim.neighbours
    sens = mech.claim.sensitivity or 1.0
    if rel == "add_remove":
        return d[:-1].copy() if d.size > 1 else np.append(d, d)
    if rel == "bit":
        return 1.0 - d
    d2 = d.copy()
    if rel == "replace_one":
        params = mech.params()
        d2[0] = params.get("upper", d2[0] + sens)
    else:  # score_linf, score_monotone, value
        d2[0] = d2[0] + sens
    return d2


def bench_verifier(plan: Plan, report: Report) -> None:
    """Samples per second through verifiers.audit, and its overhead over raw sampling."""
    try:
        from dpharness import verifiers
        audit = verifiers.audit
    except Exception as exc:  # a half-built tree is reported as a skipped case, not a crash
        for name in plan.verifier_mechanisms:
            report.skip("verifier", f"audit[{name}]", f"verifiers.audit is not available ({exc})")
        return
    try:
        from dpharness import mechanisms
    except Exception as exc:  # a half-built tree is reported as a skipped case, not a crash
        report.skip("verifier", "audit", f"mechanisms fails to import: {exc}")
        return
    for name in plan.verifier_mechanisms:
        label = f"audit[{name}]"
        if name not in mechanisms.available():
            report.skip("verifier", label, f"mechanism {name!r} is not registered")
            continue
        try:
            mech, d1 = mechanisms.registry.get(name).example()
            d2 = neighbour(mech, d1)
        except Exception as exc:  # a mechanism's example may fail in any way: the case is skipped with its error
            report.skip("verifier", label, f"example() failed: {type(exc).__name__}: {exc}")
            continue
        for samples in plan.verifier_samples:
            rng = np.random.default_rng([plan.seed, 5, samples])

            def raw(s: int, samples: int = samples) -> None:
                mech.sample(d1, size=samples, rng=rng)
                mech.sample(d2, size=samples, rng=rng)

            def aud(s: int, samples: int = samples) -> None:
                audit(mech, d1, d2, samples=samples, alpha=plan.alpha, rng=rng)

            floor = Impl(f"raw sampling[{name}]", "floor", raw, 2 * samples, measured_size=2 * samples)
            impl = Impl(label, "dpharness", aud, 2 * samples, measured_size=2 * samples,
                        note="overhead = ratio_to_floor (audit / raw sampling of both sides)")
            try:
                timed(lambda: floor.fn(0))
                impl.predicted = timed(lambda: impl.fn(0))
            except Exception as exc:  # an audit may fail in any way: the case is skipped with its error
                report.skip("verifier", label, f"samples={samples:g}: error: {type(exc).__name__}: {exc}")
                report.step(f"verifier {name} samples={samples:g}")
                continue
            grant_repeats(impl, plan, plan.min_repeats)
            run_reps([floor], [impl], impl.repeats)
            report.rows.append(floor_row("verifier", samples, floor))
            sps = impl.size / statistics.median(impl.times.values())
            report.rows.extend(rows_for("verifier", samples, impl, [floor], [],
                                        note=f"{sps:.3g} samples/s"))
            report.measured("verifier", samples, [floor], [impl])
            report.step(f"verifier {name} samples={samples:g}")
