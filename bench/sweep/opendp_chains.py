"""Factories of the OpenDP measurements in the sweep catalogue (``bench/sweep/opendp.yaml``) that a
single constructor does not make: transformation chains (``make_sum >> then_laplace``), combinators
of other measurements, and queryables with their interaction script. Each takes the entry's
``params`` (YAML values) and returns the OpenDP ``Measurement``; a measurement releasing a
``Queryable`` carries its script (:func:`dpharness.adapters.opendp_releases.with_script`).

The data every chain takes are what the pair generators make: floats in [lower, upper] for
datasets (``bounds``), vectors of per-partition counts for the partitioned ones.
"""

from __future__ import annotations

from typing import Any

from dpharness.adapters.opendp_releases import with_script

__all__ = [
    "sum_then_laplace", "sum_then_gaussian", "count_then_geometric", "sum_then_noise", "sum_then_canonical_noise",
    "count_by_then_laplace_threshold", "count_by_then_noise_threshold",
    "scores_then_noisy_max", "scores_then_noisy_top_k", "scores_then_report_noisy_max_gumbel",
    "clamp_then_private_quantile", "identity_then_rr_bitvec", "alp_queryable", "count_by_then_alp_queryable",
    "adaptive_composition", "then_adaptive", "sequential_composition", "then_sequential", "basic_composition",
    "composition", "approximate", "chain_mt", "chain_pm", "fix_delta", "fixed_approx_to_approx",
    "population_amplification", "privacy_filter", "pure_to_zcdp", "select_private_candidate", "zcdp_to_approx",
]


def _dp() -> Any:
    import opendp.prelude as dp

    dp.enable_features("contrib", "honest-but-curious")  # honest-but-curious: the post-processors of chain_pm
    return dp


def _bounded(dp: Any, bounds: Any, size: int | None = None) -> Any:
    lo, hi = (float(b) for b in bounds)
    atom = dp.atom_domain(bounds=(lo, hi), nan=False)
    return dp.vector_domain(atom, size=size) if size else dp.vector_domain(atom)


def _sum(dp: Any, bounds: Any, size: int | None = None) -> Any:
    return dp.t.make_sum(_bounded(dp, bounds, size), dp.symmetric_distance())


def _scalar(dp: Any) -> tuple[Any, Any]:
    return dp.atom_domain(T=float, nan=False), dp.absolute_distance(T=float)


# ---- transformation >> then_<measurement>


def sum_then_laplace(scale: float = 1.0, bounds: Any = (0.0, 1.0)) -> Any:
    """``make_sum`` of floats in ``bounds`` >> ``then_laplace(scale)``."""
    dp = _dp()
    return _sum(dp, bounds) >> dp.m.then_laplace(scale)


def sum_then_gaussian(scale: float = 1.0, bounds: Any = (0.0, 1.0)) -> Any:
    """``make_sum`` >> ``then_gaussian(scale)`` (zCDP)."""
    dp = _dp()
    return _sum(dp, bounds) >> dp.m.then_gaussian(scale)


def count_then_geometric(scale: float = 1.0) -> Any:
    """``make_count`` of integers >> ``then_geometric(scale)``."""
    dp = _dp()
    return dp.t.make_count(dp.vector_domain(dp.atom_domain(T=int)), dp.symmetric_distance()) >> dp.m.then_geometric(scale)


def sum_then_noise(scale: float = 1.0, bounds: Any = (0.0, 1.0), measure: str = "zcdp") -> Any:
    """``make_sum`` >> ``then_noise(output_measure, scale)`` (``measure``: "pure" or "zcdp")."""
    dp = _dp()
    mo = dp.zero_concentrated_divergence() if measure == "zcdp" else dp.max_divergence()
    return _sum(dp, bounds) >> dp.m.then_noise(mo, scale)


def sum_then_canonical_noise(epsilon: float = 1.0, delta: float = 1e-6, bounds: Any = (0.0, 1.0)) -> Any:
    """``make_sum`` >> ``then_canonical_noise`` calibrated to (epsilon, delta) at d_in = upper - lower."""
    dp = _dp()
    total = _sum(dp, bounds)
    # calibrated at the sum's own sensitivity (its map at 1, float rounding included): the
    # canonical noise's map is defined up to the d_in it is calibrated at
    return total >> dp.m.then_canonical_noise(float(total.map(1)), (float(epsilon), float(delta)))


def _count_by(dp: Any) -> Any:
    """Counts of string records (the generators' floats as text: "0.0", "0.5", "1.0", ...)."""
    return dp.t.make_count_by(dp.vector_domain(dp.atom_domain(T=str)), dp.symmetric_distance())


def count_by_then_laplace_threshold(scale: float = 1.0, threshold: int = 3) -> Any:
    """``make_count_by`` of string records (a dict of counts) >> ``then_laplace_threshold``."""
    dp = _dp()
    return _count_by(dp) >> dp.m.then_laplace_threshold(scale, threshold=threshold)


def count_by_then_noise_threshold(scale: float = 1.0, threshold: int = 3) -> Any:
    """``make_count_by`` >> ``then_noise_threshold(Approximate(MaxDivergence))``."""
    dp = _dp()
    return _count_by(dp) >> dp.m.then_noise_threshold(dp.approximate(dp.max_divergence()), scale, threshold=threshold)


def _scores(dp: Any, candidates: Any, alpha: float) -> Any:
    """Quantile scores of the candidates (``make_quantile_score_candidates``: L-inf sensitivity)."""
    return dp.t.make_quantile_score_candidates(dp.vector_domain(dp.atom_domain(T=float, nan=False)),
                                               dp.symmetric_distance(), [float(c) for c in candidates], alpha)


def scores_then_noisy_max(scale: float = 1.0, candidates: Any = (0.0, 0.25, 0.5, 0.75, 1.0), alpha: float = 0.5) -> Any:
    """Quantile scores >> ``then_noisy_max(negate=True)``: the index of the best candidate."""
    dp = _dp()
    return _scores(dp, candidates, alpha) >> dp.m.then_noisy_max(dp.max_divergence(), scale, negate=True)


def scores_then_noisy_top_k(scale: float = 1.0, k: int = 2, candidates: Any = (0.0, 0.25, 0.5, 0.75, 1.0),
                            alpha: float = 0.5) -> Any:
    """Quantile scores >> ``then_noisy_top_k(k, negate=True)``."""
    dp = _dp()
    return _scores(dp, candidates, alpha) >> dp.m.then_noisy_top_k(dp.max_divergence(), k, scale, negate=True)


def scores_then_report_noisy_max_gumbel(scale: float = 1.0, candidates: Any = (0.0, 0.25, 0.5, 0.75, 1.0),
                                        alpha: float = 0.5) -> Any:
    """Quantile scores >> ``then_report_noisy_max_gumbel(optimize="min")`` (deprecated in 0.16, still public)."""
    dp = _dp()
    return _scores(dp, candidates, alpha) >> dp.m.then_report_noisy_max_gumbel(scale, optimize="min")


def clamp_then_private_quantile(scale: float = 1.0, candidates: Any = (0.0, 0.25, 0.5, 0.75, 1.0), alpha: float = 0.5,
                                bounds: Any = (0.0, 1.0)) -> Any:
    """``make_clamp`` >> ``then_private_quantile``."""
    dp = _dp()
    clamp = dp.t.make_clamp(dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.symmetric_distance(),
                            (float(bounds[0]), float(bounds[1])))
    return clamp >> dp.m.then_private_quantile(dp.max_divergence(), [float(c) for c in candidates], alpha, scale)


def identity_then_rr_bitvec(f: float = 0.5, max_weight: int = 4) -> Any:
    """``make_identity`` on bit vectors >> ``then_randomized_response_bitvec`` (no other public
    transformation of 0.16 outputs a BitVectorDomain)."""
    dp = _dp()
    ident = dp.t.make_identity(dp.bitvector_domain(max_weight=max_weight), dp.discrete_distance())
    return ident >> dp.m.then_randomized_response_bitvec(f)


# ---- queryables: the measurement and its interaction script


def alp_queryable(scale: float = 1.0, total_limit: int = 10, value_limit: int = 3, queries: Any = ("k0", "k1", "k2")) -> Any:
    """``make_alp_queryable`` on string keys and integer counts; asks the estimates of ``queries``."""
    dp = _dp()
    meas = dp.m.make_alp_queryable(dp.map_domain(dp.atom_domain(T=str), dp.atom_domain(T=int)),
                                   dp.l01inf_distance(dp.absolute_distance(T=int)), scale=scale,
                                   total_limit=total_limit, value_limit=value_limit)
    return with_script(meas, list(queries))


def count_by_then_alp_queryable(scale: float = 1.0, total_limit: int = 10, value_limit: int = 3,
                                queries: Any = ("0.0", "0.5", "1.0", "2.0")) -> Any:
    """``make_count_by`` of string records >> ``then_alp_queryable``; asks the estimates of ``queries``."""
    dp = _dp()
    meas = _count_by(dp) >> dp.m.then_alp_queryable(scale, total_limit=total_limit, value_limit=value_limit)
    return with_script(meas, [str(q) for q in queries])


def _script(dp: Any, bounds: Any, scales: Any) -> list:
    """The sub-measurements asked of a composition: ``make_sum >> then_laplace(s)`` per scale."""
    return [sum_then_laplace(float(s), bounds) for s in scales]


def _mids(bounds: Any, scales: Any) -> list[float]:
    """Budgets a little above each sub-measurement's map (its float rounding included)."""
    w = float(bounds[1]) - float(bounds[0])
    return [1.001 * w / float(s) for s in scales]


def adaptive_composition(scales: Any = (1.0, 2.0), bounds: Any = (0.0, 1.0)) -> Any:
    """``make_adaptive_composition`` (pure DP, d_in=1) asked ``make_sum >> then_laplace`` per scale."""
    dp = _dp()
    meas = dp.c.make_adaptive_composition(_bounded(dp, bounds), dp.symmetric_distance(), dp.max_divergence(), d_in=1,
                                          d_mids=_mids(bounds, scales))
    return with_script(meas, _script(dp, bounds, scales))


def _clamp(dp: Any, bounds: Any) -> Any:
    """``make_clamp`` of float vectors to ``bounds`` (what the ``then_`` compositions follow)."""
    lo, hi = float(bounds[0]), float(bounds[1])
    return dp.t.make_clamp(dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.symmetric_distance(), (lo, hi))


def then_adaptive(scales: Any = (1.0, 2.0), bounds: Any = (0.0, 1.0)) -> Any:
    """``make_clamp`` >> ``then_adaptive_composition``, asked ``make_sum >> then_laplace`` per scale."""
    dp = _dp()
    meas = _clamp(dp, bounds) >> dp.c.then_adaptive_composition(dp.max_divergence(), d_in=1, d_mids=_mids(bounds, scales))
    return with_script(meas, _script(dp, bounds, scales))


def sequential_composition(scales: Any = (1.0, 2.0), bounds: Any = (0.0, 1.0)) -> Any:
    """``make_sequential_composition`` (pure DP, d_in=1) asked ``make_sum >> then_laplace`` per scale."""
    dp = _dp()
    meas = dp.c.make_sequential_composition(_bounded(dp, bounds), dp.symmetric_distance(), dp.max_divergence(),
                                            d_in=1, d_mids=_mids(bounds, scales))
    return with_script(meas, _script(dp, bounds, scales))


def then_sequential(scales: Any = (1.0, 2.0), bounds: Any = (0.0, 1.0)) -> Any:
    """``make_clamp`` >> ``then_sequential_composition``, asked ``make_sum >> then_laplace`` per scale."""
    dp = _dp()
    meas = _clamp(dp, bounds) >> dp.c.then_sequential_composition(dp.max_divergence(), d_in=1,
                                                                  d_mids=_mids(bounds, scales))
    return with_script(meas, _script(dp, bounds, scales))


def privacy_filter(scales: Any = (1.0, 2.0), bounds: Any = (0.0, 1.0)) -> Any:
    """``make_privacy_filter`` over ``make_fully_adaptive_composition`` (d_in=1, d_out = the sum of
    the sub-measurements' budgets), asked ``make_sum >> then_laplace`` per scale."""
    dp = _dp()
    odo = dp.c.make_fully_adaptive_composition(_bounded(dp, bounds), dp.symmetric_distance(), dp.max_divergence())
    meas = dp.c.make_privacy_filter(odo, d_in=1, d_out=sum(_mids(bounds, scales)))
    return with_script(meas, _script(dp, bounds, scales))


# ---- combinators of measurements (non-interactive)


def basic_composition(scales: Any = (1.0, 2.0), bounds: Any = (0.0, 1.0)) -> Any:
    """``make_basic_composition`` of ``make_sum >> then_laplace`` per scale (a vector release)."""
    dp = _dp()
    return dp.c.make_basic_composition(_script(dp, bounds, scales))


def composition(scales: Any = (1.0, 2.0), bounds: Any = (0.0, 1.0)) -> Any:
    """``make_composition`` of ``make_sum >> then_laplace`` per scale."""
    dp = _dp()
    return dp.c.make_composition(_script(dp, bounds, scales))


def _laplace(dp: Any, scale: float) -> Any:
    return dp.m.make_laplace(*_scalar(dp), scale)


def _gaussian(dp: Any, scale: float) -> Any:
    return dp.m.make_gaussian(*_scalar(dp), scale)


def approximate(scale: float = 1.0) -> Any:
    """``make_approximate(make_laplace)``: pure DP read as (epsilon, 0)."""
    dp = _dp()
    return dp.c.make_approximate(_laplace(dp, scale))


def chain_mt(scale: float = 1.0, bounds: Any = (0.0, 1.0)) -> Any:
    """``make_chain_mt(make_laplace, make_sum)``: the functional form of ``>>``."""
    dp = _dp()
    return dp.c.make_chain_mt(_laplace(dp, scale), _sum(dp, bounds))


def _double(x: float) -> float:
    return 2.0 * x


def chain_pm(scale: float = 1.0) -> Any:
    """``make_chain_pm(x -> 2x, make_laplace)``: a post-processed measurement."""
    dp = _dp()
    return dp.c.make_chain_pm(dp.new_function(_double, TO=float), _laplace(dp, scale))


def zcdp_to_approx(scale: float = 1.0) -> Any:
    """``make_zCDP_to_approxDP(make_gaussian)``: a privacy profile (SmoothedMaxDivergence)."""
    dp = _dp()
    return dp.c.make_zCDP_to_approxDP(_gaussian(dp, scale))


def fix_delta(scale: float = 1.0, delta: float = 1e-6) -> Any:
    """``make_fix_delta(make_zCDP_to_approxDP(make_gaussian), delta)``: (epsilon, delta) at ``delta``."""
    dp = _dp()
    return dp.c.make_fix_delta(zcdp_to_approx(scale), delta)


def fixed_approx_to_approx(scale: float = 1.0, delta: float = 1e-6) -> Any:
    """``make_fixed_approxDP_to_approxDP(make_fix_delta(...))``: back to a privacy profile."""
    dp = _dp()
    return dp.c.make_fixed_approxDP_to_approxDP(fix_delta(scale, delta))


def pure_to_zcdp(scale: float = 1.0) -> Any:
    """``make_pureDP_to_zCDP(make_laplace)``: rho = epsilon^2 / 2."""
    dp = _dp()
    return dp.c.make_pureDP_to_zCDP(_laplace(dp, scale))


def population_amplification(scale: float = 1.0, size: int = 10, population_size: int = 100,
                             bounds: Any = (0.0, 1.0)) -> Any:
    """``make_population_amplification`` of ``make_sum`` of a sized dataset (``size`` records drawn
    from ``population_size``) >> ``then_laplace``."""
    dp = _dp()
    return dp.c.make_population_amplification(_sum(dp, bounds, size) >> dp.m.then_laplace(scale), population_size)


def _score_and_value(x: float) -> list:
    return [x, x]


def select_private_candidate(scale: float = 1.0, stop_probability: float = 0.5, threshold: float = 1.0,
                             bounds: Any = (0.0, 1.0)) -> Any:
    """``make_select_private_candidate`` of ``make_sum >> then_laplace`` scored by itself: the
    release is (score, candidate), or None when no run passes ``threshold``."""
    dp = _dp()
    cand = dp.c.make_chain_pm(dp.new_function(_score_and_value, TO="ExtrinsicObject"), sum_then_laplace(scale, bounds))
    return dp.c.make_select_private_candidate(cand, stop_probability=stop_probability, threshold=threshold)
