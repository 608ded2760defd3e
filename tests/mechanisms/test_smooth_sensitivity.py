"""Smooth-sensitivity median and global-Laplace median: fast algorithms vs definitional twins,
smoothness, exact laws, samplers and bad input."""

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from dpharness import mechanisms
from dpharness.mechanisms import median_sensitivity as msens
from dpharness.mechanisms.laws import LocationScaleLaw

RELATIONS = ("replace_one", "add_remove")
BETAS = (0.003, 0.05, 0.3, 1.0, 4.0)


def _random_dataset(rng, n, lower, upper):
    """Mixed shapes: continuous, heavy ties, values at and beyond the bounds."""
    kind = int(rng.integers(5))
    if kind == 0:
        x = rng.normal((lower + upper) / 2, (upper - lower) / 6, size=n)
    elif kind == 1:  # integer ties
        x = rng.integers(int(lower), int(upper) + 1, size=n).astype(float)
    elif kind == 2:  # mass at the bounds and beyond
        x = rng.choice([lower - 3.0, lower, upper, upper + 7.0, (lower + upper) / 2], size=n)
    elif kind == 3:  # mostly one value (tie at the median)
        x = np.where(rng.random(n) < 0.8, 1.25, rng.uniform(lower, upper, size=n))
    else:  # tightly clustered: tiny gaps, needs a wide window to certify
        x = 3.0 + 1e-9 * rng.standard_normal(n)
    return x


# ------------------------------------------------------------------------------------------------
# fast algorithms == O(n^2) pair formula, exactly


def _all_paths(x, beta, lower, upper, rel):
    """(public, forced windowed path with tiny first window + bracket selection, full sorted D&C)."""
    xv = np.asarray(x, dtype=np.float64)
    public = msens.median_smooth_sensitivity(xv, beta, lower, upper, rel)
    windowed = msens._median_and_sensitivity(xv, beta, lower, upper, rel, k0=2, small_n=0, sample_size=8)[1]
    z = msens._padded_full(xv, lower, upper)
    full = msens._sensitivity_sorted(z, xv.size, beta, upper - lower, rel)
    return public, windowed, full


@pytest.mark.parametrize("rel", RELATIONS)
def test_fast_paths_equal_pair_formula_small(rel):
    rng = np.random.default_rng(20240601)
    for _ in range(400):
        n = int(rng.integers(1, 40))
        x = _random_dataset(rng, n, 0.0, 10.0)
        beta = float(rng.choice(BETAS))
        oracle = msens._smooth_sensitivity_pairs(x, beta, 0.0, 10.0, rel)
        assert _all_paths(x, beta, 0.0, 10.0, rel) == (oracle, oracle, oracle), (rel, n, beta, x)


@pytest.mark.parametrize("rel", RELATIONS)
def test_fast_paths_equal_pair_formula_large(rel):
    rng = np.random.default_rng(7)
    sizes = (999, 1000, 1500, 2001, 2800) if rel == "replace_one" else (999, 1000, 1201, 1500)
    for n in sizes:
        for beta in (0.01, 0.1, 1.0):
            x = _random_dataset(rng, n, -10.0, 10.0)
            oracle = msens._smooth_sensitivity_pairs(x, beta, -10.0, 10.0, rel)
            assert _all_paths(x, beta, -10.0, 10.0, rel) == (oracle, oracle, oracle), (n, beta)


@pytest.mark.parametrize("k0", [1, 3, 50])
def test_windowed_path_equals_full_sort_on_larger_data(k0):
    # n above the default small-n threshold, so the public path is the windowed one; the reference
    # is the full sort + divide and conquer (itself checked against the pair formula above).
    rng = np.random.default_rng(11)
    n = 40_001
    for beta, data in ((0.05, rng.standard_normal(n)), (0.3, rng.integers(-3, 4, n).astype(float))):
        z = msens._padded_full(data, -10.0, 10.0)
        m = (n + 1) // 2
        for rel in RELATIONS:
            ref = msens._sensitivity_sorted(z, n, beta, 20.0, rel)
            med, s = msens._median_and_sensitivity(data, beta, -10.0, 10.0, rel, k0=k0, sample_size=512)
            assert (med, s) == (z[m], ref)
            assert msens.median_smooth_sensitivity(data, beta, -10.0, 10.0, rel) == ref


def test_select_sorted_exact_under_adversarial_orders():
    # The strided-sample bracket must never change the answer: adversarial orders (periodic with
    # the sampling stride, sorted, reversed, constant) either bracket correctly or fall back.
    rng = np.random.default_rng(3)
    n, sample = 20_000, 64
    step = n // sample
    base = rng.standard_normal(n)
    periodic = np.tile(np.sort(rng.standard_normal(step)), n // step + 1)[:n]
    for x in (base, np.sort(base), np.sort(base)[::-1], periodic, np.zeros(n), np.round(base, 1)):
        ref = np.sort(x)
        before = x.copy()
        for q0, q1 in ((0, 5), (n // 2 - 40, n // 2 + 40), (n - 7, n - 1), (9_000, 9_000), (0, n - 1)):
            got = msens._select_sorted(x, q0, q1, sample_size=sample)
            np.testing.assert_array_equal(got, ref[q0 : q1 + 1])
        np.testing.assert_array_equal(x, before)  # input untouched


def test_clipping_commutes_and_nothing_dropped():
    rng = np.random.default_rng(5)
    x = rng.normal(0, 20, size=301)
    xc = np.clip(x, -5.0, 5.0)
    for rel in RELATIONS:
        assert msens.median_smooth_sensitivity(x, 0.2, -5, 5, rel) == msens.median_smooth_sensitivity(xc, 0.2, -5, 5, rel)
    assert msens.clipped_lower_median(x, -5, 5) == np.sort(xc)[150]
    # Out-of-range records count: three records far below move the median to the bound.
    assert msens.clipped_lower_median([-100.0, -50.0, -60.0, 7.0], 0.0, 10.0) == 0.0


def test_lower_median_convention_even_n():
    assert msens.clipped_lower_median([1.0, 2.0, 3.0, 4.0], 0, 10) == 2.0
    law = mechanisms.make("smooth_sensitivity_median", epsilon=1, lower=0, upper=10).distribution([4.0, 1.0, 3.0, 2.0])
    assert law.loc == 2.0


# ------------------------------------------------------------------------------------------------
# brute force over tiny integer universes (definitional twin of the smooth sensitivity itself)


def _lower_median(t):
    return t[(len(t) + 1) // 2 - 1]


def _neighbours(t, values, rel):
    if rel == "replace_one":
        return {tuple(sorted(t[:i] + (v,) + t[i + 1 :])) for i in range(len(t)) for v in values}
    out = {tuple(sorted(t + (v,))) for v in values}
    if len(t) > 1:  # datasets stay non-empty: the median of nothing is undefined
        out |= {t[:i] + t[i + 1 :] for i in range(len(t))}
    return out


def _brute_smooth_sensitivity(x, beta, top, rel):
    """max_k e^{-k beta} A^(k)(x) by breadth-first search over datasets with values in {0..top}.

    LS(y) = max over neighbours y' of |med(y) - med(y')|; A^(k) = max LS over distance <= k. The
    extreme neighbours of a median use the bounds 0 and top, so an integer universe containing the
    bounds gives the same answer as the continuous interval [0, top].
    """
    values = tuple(range(top + 1))
    ls_cache = {}

    def ls(t):
        if t not in ls_cache:
            ls_cache[t] = max(abs(_lower_median(t) - _lower_median(s)) for s in _neighbours(t, values, rel))
        return ls_cache[t]

    start = tuple(sorted(int(v) for v in x))
    frontier, seen, k, best, a_k = {start}, {start}, 0, 0.0, 0
    while True:
        a_k = max(a_k, max(ls(t) for t in frontier))
        best = max(best, a_k * math.exp(-beta * k))
        # A^(k) <= top: stop once no larger k can win (or A has reached its maximum).
        if a_k == top or top * math.exp(-beta * (k + 1)) <= best:
            return best
        nxt = set()
        for t in frontier:
            nxt |= _neighbours(t, values, rel)
        frontier = nxt - seen
        seen |= frontier
        k += 1


@pytest.mark.parametrize("rel", RELATIONS)
def test_smooth_sensitivity_equals_brute_force_on_tiny_universes(rel):
    rng = np.random.default_rng(99)
    cases = 0
    for top in (2, 3, 4):
        for n in range(1, 6):
            for _ in range(8):
                x = rng.integers(0, top + 1, size=n)
                beta = float(rng.choice((0.05, 0.3, 0.7, 1.5)))
                brute = _brute_smooth_sensitivity(x, beta, top, rel)
                fast = msens.median_smooth_sensitivity(x.astype(float), beta, 0, top, rel)
                assert math.isclose(fast, brute, rel_tol=1e-12, abs_tol=0), (rel, top, sorted(x), beta, fast, brute)
                cases += 1
    assert cases == 120


@pytest.mark.parametrize("rel", RELATIONS)
def test_local_sensitivity_equals_brute_force(rel):
    values = range(5)
    for n in range(1, 6):
        for t in itertools.combinations_with_replacement(values, n):
            brute = max(abs(_lower_median(t) - _lower_median(s)) for s in _neighbours(t, tuple(values), rel))
            assert msens.median_local_sensitivity(np.array(t, float), 0, 4, rel) == brute, (rel, t)


def test_local_sensitivity_zoo_witness():
    # docs/auditing.md, "The zoo": LS = 0 at [0, 5, 5, 5, 10] on [0, 10], positive at its neighbour.
    for rel in RELATIONS:
        assert msens.median_local_sensitivity([0, 5, 5, 5, 10], 0, 10, rel) == 0.0
    assert msens.median_local_sensitivity([0, 5, 5, 10, 10], 0, 10, "replace_one") == 5.0


# ------------------------------------------------------------------------------------------------
# beta-smoothness across neighbours, and the orderings LS <= S_AR <= S_RO


def _random_neighbour(rng, x, rel, lower, upper):
    v = float(rng.choice([rng.uniform(lower, upper), lower, upper, x[rng.integers(x.size)], upper + 5]))
    if rel == "replace_one":
        y = x.copy()
        y[rng.integers(x.size)] = v
        return y
    if x.size > 1 and rng.random() < 0.5:
        return np.delete(x, rng.integers(x.size))
    return np.append(x, v)


@pytest.mark.parametrize(
    "formula, relation",
    [("replace_one", "replace_one"), ("replace_one", "add_remove"), ("add_remove", "add_remove")],
)
def test_beta_smooth_across_neighbours(formula, relation):
    # S(x) <= e^beta S(y) for neighbours under `relation`; also the replace-one formula under
    # add/remove (the docstring's claim). 1e-12 relative slack: the bound is attained exactly
    # (ratio e^beta) on many tied datasets, so only floating-point rounding is forgiven.
    rng = np.random.default_rng(2024)
    attained = 0
    for _ in range(1500):
        n = int(rng.integers(1, 30))
        x = _random_dataset(rng, n, 0.0, 10.0)
        y = _random_neighbour(rng, x, relation, 0.0, 10.0)
        beta = float(rng.choice(BETAS))
        sx = msens.median_smooth_sensitivity(x, beta, 0, 10, formula)
        sy = msens.median_smooth_sensitivity(y, beta, 0, 10, formula)
        bound = math.exp(beta) * (1 + 1e-12)
        assert sx <= bound * sy and sy <= bound * sx, (x, y, beta, sx, sy)
        attained += max(sx / sy, sy / sx) > math.exp(beta) * (1 - 1e-9)
    assert attained > 0  # the check is tight, not vacuous


def test_local_below_smooth_and_add_remove_below_replace_one():
    rng = np.random.default_rng(8)
    for _ in range(500):
        n = int(rng.integers(1, 50))
        x = _random_dataset(rng, n, 0.0, 10.0)
        beta = float(rng.choice(BETAS))
        s_ro = msens.median_smooth_sensitivity(x, beta, 0, 10, "replace_one")
        s_ar = msens.median_smooth_sensitivity(x, beta, 0, 10, "add_remove")
        assert msens.median_local_sensitivity(x, 0, 10, "replace_one") <= s_ro
        assert msens.median_local_sensitivity(x, 0, 10, "add_remove") <= s_ar <= s_ro


# ------------------------------------------------------------------------------------------------
# mechanisms: constants, claims, exact laws


def test_constants_and_claims():
    c = mechanisms.make("smooth_sensitivity_median", epsilon=0.6, lower=-1, upper=1)
    assert c.beta == pytest.approx(0.1) and c.noise_factor == 6.0
    assert (c.claim.epsilon, c.claim.delta, c.claim.neighbours) == (0.6, 0.0, "replace_one")
    lap = mechanisms.make(
        "smooth_sensitivity_median", epsilon=0.5, lower=-1, upper=1, noise="laplace", delta=1e-3, sensitivity="add_remove"
    )
    assert lap.beta == pytest.approx(0.5 / (2 * math.log(2000.0))) and lap.noise_factor == 2.0
    assert (lap.claim.epsilon, lap.claim.delta, lap.claim.neighbours) == (0.5, 1e-3, "add_remove")
    g = mechanisms.make("laplace_median_global", epsilon=2.0, lower=-1, upper=3)
    assert (g.claim.epsilon, g.claim.delta, g.claim.neighbours, g.claim.sensitivity) == (2.0, 0.0, "add_remove", 4.0)


@pytest.mark.parametrize("noise, delta", [("cauchy", None), ("laplace", 0.01)])
@pytest.mark.parametrize("rel", RELATIONS)
@pytest.mark.parametrize("clip", [True, False])
def test_distribution_centre_scale_and_bounds(noise, delta, rel, clip):
    rng = np.random.default_rng(4)
    x = rng.normal(2, 3, size=101)
    mech = mechanisms.make(
        "smooth_sensitivity_median", epsilon=0.8, lower=-5, upper=5, noise=noise, delta=delta, sensitivity=rel, clip_output=clip
    )
    law = mech.distribution(x)
    assert isinstance(law, LocationScaleLaw) and law.noise == noise
    assert law.loc == np.sort(np.clip(x, -5, 5))[50]
    s = msens.median_smooth_sensitivity(x, mech.beta, -5, 5, rel)
    assert law.scale == mech.noise_factor * s / 0.8
    assert (law.lower, law.upper) == ((-5.0, 5.0) if clip else (None, None))


def test_scale_stays_positive_when_smooth_bound_underflows():
    # 10^5 identical records: S* = e^{-beta * ~5e4} * gap underflows to 0 in floating point; the
    # constant floor keeps a valid (still beta-smooth) positive scale.
    x = np.full(100_001, 2.0)
    assert msens.median_smooth_sensitivity(x, 1.0, 0, 10) == 0.0
    law = mechanisms.make("smooth_sensitivity_median", epsilon=1, lower=0, upper=10).distribution(x)
    assert law.loc == 2.0 and 0 < law.scale < 1e-300


def test_sample_uses_the_distribution():
    for name in ("smooth_sensitivity_median", "laplace_median_global"):
        mech, data = mechanisms.registry.get(name).example()
        np.testing.assert_array_equal(mech.sample(data, size=7, rng=5), mech.distribution(data).sample(7, rng=5))
        assert np.ndim(mech.sample(data, rng=1)) == 0


def test_laplace_global_law():
    mech = mechanisms.make("laplace_median_global", epsilon=0.5, lower=-10, upper=10)
    law = mech.distribution([3.0, -20.0, 1.0, 2.0])
    assert (law.loc, law.scale, law.noise, law.lower, law.upper) == (1.0, 40.0, "laplace", -10.0, 10.0)
    law = mechanisms.make("laplace_median_global", epsilon=0.5, lower=-10, upper=10, clip_output=False).distribution([3.0])
    assert (law.loc, law.lower, law.upper) == (3.0, None, None)


# ------------------------------------------------------------------------------------------------
# exact privacy loss of the calibrated mechanisms on neighbour pairs (sanity check of constants)


def _cauchy_pure_loss(px, py):
    """Exact max |log p_x - log p_y| over outputs for two clipped Cauchy laws on the same [a, b]."""
    a, b = px.lower, py.upper
    atoms = np.abs(np.subtract(px.atom_log_mass(), py.atom_log_mass())).max()
    mx, sx, my, sy = px.loc, px.scale, py.loc, py.scale
    # Stationary points of log p_x - log p_y solve a quadratic (cubic terms cancel).
    coef = [my - mx, -(my - mx) * (mx + my) + sx**2 - sy**2, (my - mx) * mx * my + sy**2 * mx - sx**2 * my]
    roots = np.roots(coef) if np.any(coef) else np.array([])
    roots = roots[np.abs(roots.imag) < 1e-9].real
    pts = np.concatenate(([a, b], roots[(roots > a) & (roots < b)]))
    d = np.abs(stats.cauchy.logpdf(pts, mx, sx) - stats.cauchy.logpdf(pts, my, sy))
    grid = np.linspace(a, b, 2001)  # self-check: the analytic maximum dominates a grid
    dg = np.abs(stats.cauchy.logpdf(grid, mx, sx) - stats.cauchy.logpdf(grid, my, sy))
    assert dg.max() <= d.max() + 1e-9
    return max(float(atoms), float(d.max()))


@pytest.mark.parametrize("rel", RELATIONS)
def test_cauchy_calibration_exact_loss(rel):
    # Claim: epsilon. Derived (docstring): shift <= epsilon/6 plus scale change <= beta = epsilon/6,
    # so the exact loss must be <= epsilon/3 on every neighbour pair (both relations for the
    # replace-one formula, add/remove for the add/remove one).
    rng = np.random.default_rng(31)
    eps = 1.2
    formulas = ("replace_one", "add_remove") if rel == "add_remove" else ("replace_one",)
    worst = 0.0
    for _ in range(300):
        n = int(rng.integers(1, 15))
        x = _random_dataset(rng, n, 0.0, 10.0)
        y = _random_neighbour(rng, x, rel, 0.0, 10.0)
        for f in formulas:
            mech = mechanisms.make("smooth_sensitivity_median", epsilon=eps, lower=0, upper=10, sensitivity=f)
            loss = _cauchy_pure_loss(mech.distribution(x), mech.distribution(y))
            assert loss <= eps / 3 * (1 + 1e-9), (f, x, y, loss)
            worst = max(worst, loss)
    assert worst > eps / 10  # pairs were informative


def _laplace_hockey_stick(px, py, eps, grid_size=200_001):
    """delta(eps) = sup_E P_x(E) - e^eps P_y(E) for clipped Laplace laws (atoms exact, interior
    by trapezoid on a fine grid: the integrand is continuous and piecewise smooth)."""
    lx, ly = np.exp(px.atom_log_mass()), np.exp(py.atom_log_mass())
    atoms = np.maximum(0.0, lx - math.exp(eps) * ly).sum()
    g = np.linspace(px.lower, px.upper, grid_size)
    f = np.maximum(0.0, np.exp(px.log_pdf(g[1:-1])) - math.exp(eps) * np.exp(py.log_pdf(g[1:-1])))
    return float(atoms + np.trapezoid(np.concatenate(([0.0], f, [0.0])), g))


def test_laplace_calibration_hockey_stick():
    # Integer data (ties) make S change by exactly e^beta between neighbours, the case a beta
    # without the ln(2/delta) factor gets wrong (docs/auditing.md, "The zoo": it gives delta ~0.1 here).
    rng = np.random.default_rng(17)
    eps, delta = 2.0, 0.01
    for k in range(60):
        n = int(rng.integers(5, 40))
        x = rng.integers(0, 11, size=n).astype(float)
        rel = RELATIONS[k % 2]
        y = _random_neighbour(rng, x, rel, 0.0, 10.0)
        mech = mechanisms.make("smooth_sensitivity_median", epsilon=eps, lower=0, upper=10, noise="laplace", delta=delta, sensitivity=rel)
        px, py = mech.distribution(x), mech.distribution(y)
        for p, q in ((px, py), (py, px)):
            # 1e-6 covers the trapezoid error of the interior integral.
            assert _laplace_hockey_stick(p, q, eps, grid_size=20_001) <= delta + 1e-6


# ------------------------------------------------------------------------------------------------
# samplers match their exact laws (KS on the continuous part, chi-square on the atoms)

_SAMPLER_CASES = [
    # Scales comparable to [lower, upper], so that both the atoms and the interior are informative.
    ("smooth_sensitivity_median", dict(epsilon=1.0, lower=0, upper=10), np.round(np.random.default_rng(0).normal(5, 1.5, 41), 1)),
    ("smooth_sensitivity_median", dict(epsilon=1.0, lower=0, upper=10, noise="laplace", delta=0.1, sensitivity="add_remove"),
     [1, 2, 2.5, 3, 3, 3.2, 4, 6, 7.5, 9]),
    ("smooth_sensitivity_median", dict(epsilon=2.0, lower=0, upper=10, clip_output=False), [1.0, 2.0, 3.0, 4.0, 9.0]),
    ("laplace_median_global", dict(epsilon=1.0, lower=0, upper=10), [1.0, 8.0, 9.0]),
]
# Family-wise false-alarm rate 1e-6, Bonferroni over 2 tests per case.
_ALPHA = 1e-6 / (2 * len(_SAMPLER_CASES))


@pytest.mark.statistical
@pytest.mark.parametrize("name, params, data", _SAMPLER_CASES)
def test_sampler_matches_distribution(name, params, data):
    mech = mechanisms.make(name, **params)
    law = mech.distribution(data)
    draws = mech.sample(data, size=20_000, rng=np.random.default_rng(1234))
    dist = law.dist
    if law.clipped:
        a, b = law.lower, law.upper
        assert np.all((draws >= a) & (draws <= b))
        p_lo, p_hi = np.exp(law.atom_log_mass())
        expected = draws.size * np.array([p_lo, 1 - p_lo - p_hi, p_hi])
        assert expected.min() >= 5  # chi-square approximation valid; the cases are chosen for it
        observed = np.array([(draws == a).sum(), ((draws > a) & (draws < b)).sum(), (draws == b).sum()])
        chi2 = float(((observed - expected) ** 2 / expected).sum())
        assert stats.chi2.sf(chi2, df=2) > _ALPHA, (observed, expected)
        inner = draws[(draws > a) & (draws < b)]
        fa, fb = dist.cdf(a), dist.cdf(b)
        p = stats.kstest(inner, lambda t: (dist.cdf(t) - fa) / (fb - fa)).pvalue
    else:
        p = stats.kstest(draws, dist.cdf).pvalue
    assert p > _ALPHA


# ------------------------------------------------------------------------------------------------
# bad input


@pytest.mark.parametrize(
    "params, match",
    [
        (dict(epsilon=0, lower=0, upper=1), "epsilon"),
        (dict(epsilon=-1, lower=0, upper=1), "epsilon"),
        (dict(epsilon=float("nan"), lower=0, upper=1), "epsilon"),
        (dict(epsilon=1, lower=1, upper=1), "lower"),
        (dict(epsilon=1, lower=2, upper=1), "lower"),
        (dict(epsilon=1, lower=0, upper=float("inf")), "upper"),
        (dict(epsilon=1, lower=0, upper=1, noise="gauss"), "noise"),
        (dict(epsilon=1, lower=0, upper=1, noise="laplace"), "delta"),
        (dict(epsilon=1, lower=0, upper=1, noise="laplace", delta=0), "delta"),
        (dict(epsilon=1, lower=0, upper=1, noise="laplace", delta=1), "delta"),
        (dict(epsilon=1, lower=0, upper=1, noise="laplace", delta=1.5), "delta"),
        (dict(epsilon=1, lower=0, upper=1, noise="laplace", delta=-0.1), "delta"),
        (dict(epsilon=1, lower=0, upper=1, noise="cauchy", delta=0.01), "delta"),
        (dict(epsilon=1, lower=0, upper=1, sensitivity="swap"), "sensitivity"),
        (dict(epsilon=1, lower=0, upper=1, clip_output="yes"), "clip_output"),
    ],
)
def test_smooth_mechanism_rejects_bad_parameters(params, match):
    with pytest.raises(ValueError, match=match):
        mechanisms.make("smooth_sensitivity_median", **params)


@pytest.mark.parametrize(
    "params, match",
    [
        (dict(epsilon=0, lower=0, upper=1), "epsilon"),
        (dict(epsilon=1, lower=3, upper=1), "lower"),
        (dict(epsilon=1, lower=0, upper=1, clip_output=None), "clip_output"),
    ],
)
def test_global_mechanism_rejects_bad_parameters(params, match):
    with pytest.raises(ValueError, match=match):
        mechanisms.make("laplace_median_global", **params)


@pytest.mark.parametrize("data, match", [([], "empty"), ([1.0, float("nan")], "finite"), ([float("inf"), 1.0], "finite"), ([[1.0, 2.0]], "1-D")])
def test_bad_data_rejected(data, match):
    for name in ("smooth_sensitivity_median", "laplace_median_global"):
        mech, _ = mechanisms.registry.get(name).example()
        with pytest.raises(ValueError, match=match):
            mech.sample(data, size=3, rng=0)
    with pytest.raises(ValueError, match=match):
        msens.median_smooth_sensitivity(data, 0.1, 0, 1)
    with pytest.raises(ValueError, match=match):
        msens.median_local_sensitivity(data, 0, 1)


def test_public_functions_reject_bad_arguments():
    with pytest.raises(ValueError, match="beta"):
        msens.median_smooth_sensitivity([1.0], 0.0, 0, 1)
    with pytest.raises(ValueError, match="neighbours"):
        msens.median_smooth_sensitivity([1.0], 0.1, 0, 1, neighbours="swap")
    with pytest.raises(ValueError, match="lower"):
        msens.median_smooth_sensitivity([1.0], 0.1, 1, 1)
    with pytest.raises(ValueError, match="neighbours"):
        msens.median_local_sensitivity([1.0], 0, 1, neighbours="bit")
