"""dpharness.adapters against particular releases of OpenDP and diffprivlib: privacy bugs that
shipped, audited through the adapters as a user would (docs/adapters.md, "Shipped bugs, audited
through the adapters"). Each test runs only where its release is installed and is skipped
otherwise; in the project environment (OpenDP 0.16, diffprivlib 0.6.6) the "fixed" checks and the
still-open diffprivlib bug run. The matrix of releases was run in throwaway environments.

Thresholds: a "not flagged" check of a correct OpenDP release (which cannot be seeded) runs at
alpha = 1e-6, so it fails with probability at most 1e-6; diffprivlib 0.6+ is seeded, so its verdicts
are deterministic (alpha = 1e-3). "Flagged" checks run at alpha = 1e-3. The "flagged" checks certify bounds far above the claims (RR: 2.47 against
ln 3 = 1.10 at 2e4 draws; the float leaks: support violations, never observed under the other
dataset), so their failure probability is negligible even unseeded.
"""

from __future__ import annotations

import importlib
import math
import warnings
from importlib import metadata

import numpy as np
import pytest

from dpharness import adapters as A
from dpharness import verifiers as V

N = 20_000


def _release(dist: str) -> tuple[int, ...]:
    try:
        return tuple(int(p) for p in metadata.version(dist).split(".")[:3])
    except (metadata.PackageNotFoundError, ValueError):
        pytest.skip(f"{dist} is not installed")


def _opendp_measurements():
    """opendp.measurements (0.6+) or opendp.meas (before), with contrib (and, before 0.7, the
    floating-point feature the float measurements needed) enabled."""
    pytest.importorskip("opendp")
    from opendp.mod import enable_features

    enable_features("contrib", *(("floating-point",) if _release("opendp") < (0, 7) else ()))
    with warnings.catch_warnings():  # older releases warn on import (np.bool8); not ours to fix
        warnings.simplefilter("ignore")
        try:
            import opendp.measurements as m
        except ImportError:
            import opendp.meas as m
    return m


def _rr_bool():
    return _opendp_measurements().make_randomized_response_bool(0.75)


# --------------------------------------------------------------------------------------------
# OpenDP


def test_opendp_privacy_relation_read_by_bisection():
    # OpenDP before 0.5 has check(d_in, d_out) and no map: the claim is the smallest epsilon the
    # relation accepts, from above (Laplace of scale 2: d_in / 2, so 0.5 at 1 and 1.5 at 3)
    if _release("opendp") >= (0, 5):
        pytest.skip("OpenDP 0.5+ has privacy maps")
    meas = _opendp_measurements().make_base_laplace(2.0)
    mech = A.opendp(meas)
    eps = mech.claim.epsilon
    assert 0.5 <= eps <= 0.5 * (1 + 1e-9) and meas.check(1.0, eps) and not meas.check(1.0, eps * (1 - 1e-9))
    assert mech.claim.input_metric == "absolute_distance" and mech.kind == "real"
    assert mech.claim.privacy_map(3.0) == pytest.approx(1.5, rel=1e-9)


def test_opendp_rr_bool_of_0_4_is_flagged():
    # opendp 0.4: make_randomized_response_bool answered wrongly too often (fixed in 0.5, opendp#481):
    # the adapter reads ln 3 from the relation; the audit certifies epsilon >= 2.4
    if _release("opendp")[:2] != (0, 4):
        pytest.skip("the bug shipped in OpenDP 0.4")
    v = V.audit(A.opendp(_rr_bool()), False, True, samples=N, alpha=1e-3)
    assert v.violated and v.epsilon_lower > 2.0


def test_opendp_rr_bool_since_0_5_is_not_flagged():
    if _release("opendp") < (0, 5):
        pytest.skip("fixed in OpenDP 0.5")
    v = V.audit(A.opendp(_rr_bool()), False, True, samples=N // 4, alpha=1e-6)
    assert not v.violated and v.epsilon_claimed == pytest.approx(math.log(3))


def test_opendp_float_laplace_of_0_4_leaks_bits():
    # opendp < 0.5: make_base_laplace added float noise to a float (a precision-based leak; OpenDP
    # 0.5 "Security": noise on an exact integer lattice); the adapters' float events see it
    if _release("opendp") >= (0, 5):
        pytest.skip("fixed in OpenDP 0.5")
    v = V.audit(A.opendp(_opendp_measurements().make_base_laplace(1.0)), 0.0, 1.0, samples=N, alpha=1e-3)
    assert v.violated and v.support_violation


@pytest.mark.slow
def test_opendp_laplace_since_0_5_does_not_leak_bits():
    if _release("opendp") < (0, 5):
        pytest.skip("the float Laplace of OpenDP < 0.5 leaks")
    m = _opendp_measurements()
    if hasattr(m, "make_laplace"):
        import opendp.prelude as dp

        try:  # nan= exists from OpenDP 0.13 (and is required since)
            floats = dp.atom_domain(T=float, nan=False)
        except TypeError:
            floats = dp.atom_domain(T=float)
        meas = m.make_laplace(floats, dp.absolute_distance(T=float), scale=1.0)
    else:
        meas = m.make_base_laplace(1.0)
    v = V.audit(A.opendp(meas), 0.0, 1.0, samples=N, alpha=1e-6)  # float events on (the default)
    assert not v.violated


def _float_sum_pair():
    """A bounded float sum of 16 records in [2^52, 2^52 + 1] plus Laplace noise of scale 50 (claim
    (U - L)/50 = 0.02 per record replaced in the ideal analysis), built with the installed
    release's constructors, and the pair on which sequential float rounding moves the sum by 16
    (the exhaustive worst case, verifiers.suites.library_bugs.float_sum_worst_case)."""
    from dpharness.verifiers.controls.suites.library_bugs import float_sum_worst_case

    meas = _opendp_measurements()
    lo = 2.0 ** 52
    if _release("opendp") < (0, 8):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                import opendp.transformations as t
            except ImportError:
                import opendp.trans as t
        built = t.make_sized_bounded_sum(16, (lo, lo + 1.0), T=float) >> meas.make_base_laplace(50.0)
    else:
        import opendp.prelude as dp

        dom = dp.vector_domain(dp.atom_domain(bounds=(lo, lo + 1.0)), size=16)
        built = dp.t.make_sum(dom, dp.symmetric_distance()) >> dp.m.then_laplace(50.0)
    worst, d1, d2 = float_sum_worst_case(16)
    return A.opendp(built, float_events=False), list(d1), list(d2), worst


def test_opendp_float_sum_of_0_4_underestimates_its_sensitivity():
    # Casacuberta et al. (CCS 2022); OpenDP 0.5 "Added: account for finite data types in aggregators".
    # The rounding alone gives a loss of 16 x 0.02 = 0.32 on this pair (with ideal noise).
    if _release("opendp") >= (0, 5):
        pytest.skip("fixed in OpenDP 0.5")
    mech, d1, d2, _ = _float_sum_pair()
    v = V.audit(mech, d1, d2, samples=N, alpha=1e-3)
    assert v.epsilon_claimed == pytest.approx(0.02) and v.violated and v.epsilon_lower > 0.15


@pytest.mark.slow
def test_opendp_float_sum_since_0_5_accounts_for_rounding():
    if _release("opendp") < (0, 5):
        pytest.skip("OpenDP < 0.5 does not account for float rounding in sums")
    mech, d1, d2, worst = _float_sum_pair()
    v = V.audit(mech, d1, d2, samples=N, alpha=1e-6)
    assert v.epsilon_claimed >= worst / 50.0 and not v.violated  # the map covers the worst rounding


# --------------------------------------------------------------------------------------------
# diffprivlib


def _dpl(module: str, name: str):
    """``diffprivlib.<module>.<name>``, or skip with the reason (missing, or not importable with this
    scikit-learn); old releases warn on import (numpy deprecations), not ours to fix."""
    pytest.importorskip("sklearn")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return getattr(importlib.import_module(f"diffprivlib.{module}"), name)
        except (ImportError, AttributeError) as exc:
            pytest.skip(f"no diffprivlib.{module}.{name} here: {exc}")


def _linreg(lower: float):
    LinearRegression = _dpl("models", "LinearRegression")
    model = LinearRegression(epsilon=1.0, bounds_X=(lower, 1.0), bounds_y=(0.0, 1.0), fit_intercept=False)
    mech = A.diffprivlib_model(model, outputs=("coef_",))
    if not mech.seeded:
        pytest.skip("diffprivlib before 0.6 cannot be seeded")
    return mech


# Replace one record (x, y) = (1, 0) by (0, 0): sum x y is unchanged, sum x^2 drops from 2 to 1.
D1, D2 = np.array([[1.0, 1.0], [1.0, 0.0]]), np.array([[1.0, 1.0], [0.0, 0.0]])


@pytest.mark.slow
def test_diffprivlib_linear_regression_diagonal_sensitivity_is_flagged():
    # diffprivlib 0.4.0 - 0.6.6 (diffprivlib#105, unfixed in 0.6.6): the sensitivity of sum x_i^2 is
    # max(|L|, |L|)^2, 0 for bounds (0, U), so that coefficient is released exactly; the fitted coef_
    # is (sum x y + Laplace) / sum x^2, whose scale differs between D1 and D2: unbounded loss
    if _release("diffprivlib") > (0, 6, 6):
        pytest.skip("recorded for diffprivlib up to 0.6.6; re-check later releases")
    # (seeded: epsilon >= 1.06 certified at 1e3 draws per dataset, 2.59 at 2e4; docs/adapters.md)
    v = V.audit(_linreg(0.0), D1, D2, samples=1000, rng=1, alpha=1e-3, float_events=False)
    assert v.violated and v.epsilon_lower > 1.0


@pytest.mark.slow
def test_diffprivlib_linear_regression_symmetric_bounds_control():
    # the same release and pair with bounds (-1, 1), where max(|L|, |L|) = max(|L|, |U|): the bug is inert
    v = V.audit(_linreg(-1.0), D1, D2, samples=1000, rng=1, alpha=1e-3, float_events=False)
    assert not v.violated


def test_diffprivlib_snapping_does_not_leak_bits():
    # diffprivlib's Laplace leaks its low-order bits in every release (tests/test_adapters.py); Snapping
    # (0.5.2+) is its answer, and the float events find nothing on it
    Snapping = _dpl("mechanisms", "Snapping")
    mech = A.diffprivlib_mechanism(Snapping(epsilon=1.0, sensitivity=1.0, lower=-10.0, upper=10.0))
    if not mech.seeded:
        pytest.skip("diffprivlib before 0.6 cannot be seeded")
    assert not V.audit(mech, 0.0, 1.0, samples=N, rng=1, alpha=1e-3).violated
