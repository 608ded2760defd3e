"""Power of the verifier, by computation: the probability that a real violation is flagged.

Two guarantees, both exact or provably conservative (no Monte Carlo):

* :func:`certification_power` -- replaying a known witness (``audit(..., event=E, direction=d)``):
  the certification draws Poisson(lam) outputs per dataset, so the event counts are independent
  K1 ~ Poisson(lam p_num), K2 ~ Poisson(lam p_den); the detecting region is, for each k2, a tail
  k1 >= kmin(k2) (the bound is increasing in k1), so P[detect] = sum_k2 P[K2 = k2] P[K1 >= kmin(k2)]
  exactly (tails beyond 1e-17 are counted as failures).

* :func:`audit_power` -- the automatic audit (selection + certification), for a mechanism whose
  output law is known exactly (finite ``log_prob``; a CDF for real outputs). The candidate events
  the selection can pick are data dependent (thresholds at observed values, ...), so they are
  *bracketed* by a fixed grid: for real outputs, the extended grid -inf = g_0 < g_1 < ... < g_G <
  g_{G+1} = +inf (quantiles of each law, half a binomial standard deviation of the selection
  counts apart, geometric in the far tails, with every atom of the laws included); a threshold
  {y <= t} with t in the open cell (g_{j-1}, g_j) lies between the grid events (-inf, g_{j-1}] and
  (-inf, g_j), t = g_j is a grid event itself (likewise for {y >= t}), so its selection counts and
  true probabilities lie between theirs; an atom can only be a candidate where a law has an atom
  (elsewhere a repeated value has probability 0 -- in floating point, a value repeated 4 times
  or more has negligible probability; the bound needs s0 > score(3, 0) so fewer copies never win).
  This covers ``audit(..., events="thresholds")``; data-dependent intervals are not covered (a
  narrow interval inside one grid cell cannot be bracketed from inside). For finite outputs every
  subset is its own cell (``events="all"``). A cell c (row and direction) has certification power
  D_c >= D(x_in, y_out) (numerator inner, denominator outer probability; D increasing in x,
  decreasing in y).

  The argument. Fix a reference event E* (one of the grid thresholds, law atoms or single finite
  outputs, or the witness event; both directions; the best is used -- each is a valid bound, so no
  union is paid). Some candidate has counts >= (C_num(E*) - slack, <= C_den(E*)) (``slack`` covers
  a capped candidate list: :func:`verifiers.events.threshold_gap`, numerator only, 0 in the fully
  kept tails), so the selected candidate scores >= S* = S(C_num - slack, C_den)
  (:func:`verifiers.statistical.batch.selection_score`, increasing in the numerator count, decreasing in
  the denominator count; S* has an exactly computable law: two independent binomials). Then

  1. Q: every grid event's count is inside its exact binomial quantiles at level eta/(8 N) per
     side (N rows, 4 quantiles a row): P[Q fails] <= eta/2. s0 = S at E*'s eta/6 quantiles.
  2. On Q and S* >= s0 the selected (event, direction) lies in a cell of A = {cells whose count
     bounds S(upper quantile of the outer numerator, lower quantile of the inner denominator)
     reach s0}; P[S* < s0] is computed exactly.
  3. For c in A, P[c selected, S* >= s0] <= u_c = sum_l min(P[S* < s_{l+1}], P[S(C_out,num,
     C_in,den) >= s_l]) over score levels s0 = s_1 < ... < s_L (s_{L+1} = inf; the pair of counts
     is again two independent binomials), and given the selection the fresh certification fails
     with probability <= 1 - D_c. The cells are disjoint, so
     P[fail] <= eta/2 + P[S* < s0] + max {sum_c w_c (1 - D_c) : 0 <= w_c <= u_c, sum w_c <= 1}
     (a greedy fill), cells with 1 - D_c < 1e-12 adding at most 1e-12.

  D is evaluated exactly (Poisson sums) at the Pareto frontier of worst (x_in, y_out), every cell
  bounded by a frontier point dominating it, and exactly per cell where that is below 1 - 1e-13;
  for (epsilon, delta) claims D is the worst over every alpha split the selection may choose, and
  over every shrinkage level the candidate count allows (their failure terms are added).
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any, Callable

import numpy as np
from scipy import stats

from dpharness.mechanisms.contracts import HasDistribution, is_finite
from dpharness.verifiers import bounds
from dpharness.verifiers.losses.canonical import canonical
from dpharness.verifiers.events import TAIL_KEEP, THRESHOLD_CAP, finite_candidates, real_candidates, threshold_gap
from dpharness.verifiers.statistical.batch import ALPHA_SPLITS, DEFAULT_SELECTION, selection_score, shrink_level

__all__ = ["certification_power", "audit_power", "split_sizes", "possible_shrinks"]

def _prange(mu: float) -> tuple[int, int]:
    """Counts outside [lo, hi] have total Poisson(mu) probability far below 1e-17 (10 standard
    deviations plus 40); the sums below treat them as failures, so the results stay lower bounds."""
    if mu <= 0:
        return 0, 0
    w = 10.0 * math.sqrt(mu) + 40.0
    return max(0, int(mu - w)), int(mu + w) + 1


def _kmin_pure(k2: np.ndarray, kmax: int, epsilon: float, alpha: float) -> np.ndarray:
    """Smallest k1 in [1, kmax] with conditional_epsilon_lower(k1, k2) > epsilon (kmax + 1 if none)."""
    lo = np.zeros(k2.size, dtype=np.int64)  # invariant: lo does not detect (k1 = 0 never does)
    hi = np.full(k2.size, kmax + 1, dtype=np.int64)  # hi detects, or is the sentinel kmax + 1
    for _ in range(64):
        todo = hi - lo > 1
        if not todo.any():
            break
        mid = (lo + hi) // 2
        det = np.asarray(bounds.conditional_epsilon_lower(mid, k2, alpha)) > epsilon
        hi = np.where(todo & det, mid, hi)
        lo = np.where(todo & ~det, mid, lo)
    return hi


def certification_power(p_num: float, p_den: float, lam: float, epsilon: float, *, alpha1: float,
                        alpha2: float = 0.0, delta: float = 0.0) -> float:
    """P[the certification of an event with probabilities (p_num, p_den) flags epsilon], for
    Poisson(lam) draws per dataset: the conditional bound at alpha1 (pure claims, delta = 0) or the
    Garwood product bound at (alpha1, alpha2) with delta."""
    mu1, mu2 = lam * p_num, lam * p_den
    lo2, hi2 = _prange(mu2)
    k2 = np.arange(lo2, hi2 + 1)
    pmf2 = stats.poisson.pmf(k2, mu2) if mu2 > 0 else np.ones(1)
    _, hi1 = _prange(mu1)
    if delta == 0.0:
        kmin = _kmin_pure(k2, hi1, epsilon, alpha1)
    else:
        lo1, _ = _prange(mu1)
        k1 = np.arange(lo1, hi1 + 1)
        low = np.asarray(bounds.poisson_lower(k1, alpha1)) / lam
        thr = delta + math.exp(epsilon) * np.asarray(bounds.poisson_upper(k2, alpha2)) / lam
        idx = np.searchsorted(low, thr, side="right")  # below lo1 counts as not detecting (conservative)
        kmin = np.where(idx < k1.size, k1[np.minimum(idx, k1.size - 1)], hi1 + 1)
    p_hit = stats.poisson.sf(kmin - 1, mu1) if mu1 > 0 else (kmin <= 0).astype(np.float64)
    return float(np.clip(np.sum(pmf2 * p_hit), 0.0, 1.0))


def split_sizes(samples: int, selection: float = DEFAULT_SELECTION) -> tuple[int, int]:
    """(n_sel, expected n_cert) exactly as :func:`verifiers.audit` splits ``samples``."""
    n_sel = max(1, int(round(samples * float(selection))))
    return n_sel, samples - n_sel


@lru_cache(maxsize=256)
def possible_shrinks(n_sel: int, kind: str, k: int | None = None, atoms: int = 0,
                     intervals: bool = True) -> tuple[float, ...]:
    """Shrinkage levels the selection can use: from the candidate count of ``n_sel`` continuous
    outputs per dataset (plus ``atoms`` repeated values), or of 1..k observed finite outputs."""
    if kind == "finite":
        out = set()
        for j in range(1, (k or 1) + 1):
            y = np.arange(j)
            out.add(shrink_level(2 * len(finite_candidates(y, y))))
        return tuple(sorted(out))
    out = set()
    for a in range(0, atoms + 1):
        y = np.arange(2 * n_sel, dtype=np.float64)
        y[: 2 * a] = np.repeat(np.arange(a, dtype=np.float64), 2)
        out.add(shrink_level(2 * len(real_candidates(y[:n_sel], y[n_sel:], intervals=intervals))))
    return tuple(sorted(out))


def _law_functions(mechanism: Any, data: Any) -> tuple[Callable, list[float]]:
    """(cdf, atoms) of the real output law of ``mechanism`` on ``data``."""
    if not isinstance(mechanism, HasDistribution):  # e.g. the zoo's value-releasing RNM: cdf(data, y) only
        if not callable(getattr(mechanism, "cdf", None)):
            raise ValueError(f"audit_power needs an exact law: {type(mechanism).__name__} has neither "
                             "distribution(data) nor cdf(data, y)")
        return (lambda y: np.asarray(mechanism.cdf(data, y), dtype=np.float64)), []
    try:
        form = canonical(mechanism.distribution(data))  # the one canonical form exact mode compares
    except ValueError:
        form = None
    if form is not None:
        v = form.point_mass
        if v is not None:
            return form.cdf, [v]
        if form.grid is None:
            return form.cdf, [float(a) for a in form.atoms]
    raise ValueError(f"audit_power needs a continuous law, a point mass or a clipped location-scale law, "
                     f"got {mechanism.distribution(data)!r}")


def _levels(n_sel: int, resolution: float, tail: float = 1e-12) -> np.ndarray:
    """Probability levels in (0, 1), symmetric about 1/2: from ``tail`` upwards in steps of
    min(0.1 q, resolution * sqrt(q (1 - q) / n_sel)) -- geometric in the far tail, a fraction of
    one binomial standard deviation of ``n_sel`` draws elsewhere -- mirrored above 1/2."""
    out = []
    q = tail
    while q < 0.5:
        out.append(q)
        q += min(0.1 * q, resolution * math.sqrt(q * (1.0 - q) / n_sel))
    lv = np.asarray(out + [0.5])
    return np.unique(np.concatenate([lv, 1.0 - lv]))


def _inverse(F: Callable, levels: np.ndarray) -> np.ndarray:
    """For each level, a point b with F(b) >= level and F(b - tiny) < level (bisection)."""
    lo, hi = -1.0, 1.0
    for _ in range(2100):
        if float(F(np.array(lo))) < levels[0]:
            break
        lo *= 2.0
    for _ in range(2100):
        if float(F(np.array(hi))) >= levels[-1]:
            break
        hi *= 2.0
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise ValueError("audit_power: the output law's quantiles are not finite")
    a = np.full(levels.size, lo)
    b = np.full(levels.size, hi)
    for _ in range(100):
        m = 0.5 * (a + b)
        below = F(m) < levels
        a = np.where(below, m, a)
        b = np.where(below, b, m)
    return b


def _quantile_grid(cdfs: list[Callable], atoms: list[float], n_sel: int, resolution: float) -> np.ndarray:
    """Quantile points of *each* law at :func:`_levels` (dense where either law has mass, relative
    to that law's own binomial noise), plus every atom."""
    lv = _levels(n_sel, resolution)
    pts = [_inverse(F, lv) for F in cdfs]
    g = np.unique(np.concatenate(pts + [np.asarray(atoms, dtype=np.float64)]))
    return g[np.isfinite(g)]


_NEVER = np.iinfo(np.int64).max // 4  # a count threshold no draw reaches (P = 0)


def _windows(mean: np.ndarray, sd: np.ndarray, top: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Count windows mean -/+ (10 sd + 40) (clipped to [0, top]); see :func:`_prange`."""
    w = 10.0 * sd + 40.0
    lo = np.maximum(np.floor(mean - w), 0).astype(np.int64)
    hi = np.ceil(mean + w).astype(np.int64) + 1
    if top is not None:
        hi = np.minimum(hi, int(top))
    return lo, hi


def _chunks(lens: np.ndarray, cap: int = 3_000_000):
    """Consecutive index ranges of ``lens`` with at most ``cap`` total entries (at least one each)."""
    start, tot = 0, 0
    for i, L in enumerate(lens.tolist()):
        if tot and tot + L > cap:
            yield start, i
            start, tot = i, 0
        tot += L
    if start < lens.size:
        yield start, lens.size


def _flat(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(owner, k): every k in [lo_i, hi_i] with its row i."""
    lens = hi - lo + 1
    owner = np.repeat(np.arange(lo.size), lens)
    k = np.arange(int(lens.sum())) - np.repeat(np.cumsum(lens) - lens, lens) + np.repeat(lo, lens)
    return owner, k


def _detect_many(x: np.ndarray, y: np.ndarray, lam: float, epsilon: float, alpha1: float, alpha2: float,
                 delta: float) -> np.ndarray:
    """:func:`certification_power` for many (x, y) at once (same formula: exact Poisson sums over
    the denominator count, counts outside the windows counted as failures)."""
    out = np.zeros(x.size)
    ok = (x > 0) & (y < 1)
    if not ok.any():
        return out
    xs, ys = x[ok], y[ok]
    mu2 = lam * ys
    lo2, hi2 = _windows(mu2, np.sqrt(mu2))
    lo2 = np.where(mu2 > 0, lo2, 0)
    hi2 = np.where(mu2 > 0, hi2, 0)
    kmax1 = int(np.ceil(lam * xs.max() + 10.0 * math.sqrt(lam * xs.max()) + 40.0)) + 1
    k2all = np.arange(int(hi2.max()) + 1)
    if delta == 0.0:
        kmin = _kmin_pure(k2all, kmax1, epsilon, alpha1)
    else:
        k1 = np.arange(kmax1 + 1)
        low = np.asarray(bounds.poisson_lower(k1, alpha1)) / lam
        thr = delta + math.exp(epsilon) * np.asarray(bounds.poisson_upper(k2all, alpha2)) / lam
        kmin = np.searchsorted(low, thr, side="right")  # index = k1
    kmin = np.where(kmin > kmax1, _NEVER, kmin)  # no detection inside the window: none at all
    res = np.zeros(xs.size)
    for s, e in _chunks(hi2 - lo2 + 1):
        own, k2 = _flat(lo2[s:e], hi2[s:e])
        m2 = mu2[s:e][own]
        pmf = np.where(m2 > 0, stats.poisson.pmf(k2, np.maximum(m2, 1e-300)), (k2 == 0).astype(np.float64))
        hit = stats.poisson.sf(np.minimum(kmin[k2], _NEVER) - 1, lam * xs[s:e][own])
        res[s:e] = np.bincount(own, weights=pmf * hit, minlength=e - s)
    out[ok] = np.clip(res, 0.0, 1.0)
    return out


def _kmin_select(s: float, kd: np.ndarray, n_sel: int, n_cert: int, alpha: float, delta: float,
                 gamma: float) -> np.ndarray:
    """For each denominator count in ``kd``, the smallest numerator count in 0..n_sel with
    selection_score >= s (n_sel + 1 if none; a count of 0 never scores >= s >= 0): the score is
    increasing in the numerator count."""
    kd = np.asarray(kd, dtype=np.float64)
    lo = np.zeros(kd.size, dtype=np.int64)
    hi = np.full(kd.size, n_sel + 1, dtype=np.int64)
    for _ in range(64):
        todo = hi - lo > 1
        if not todo.any():
            break
        mid = (lo + hi) // 2
        sel = selection_score(mid.astype(np.float64), kd, n_sel, n_cert, alpha, delta, shrink=gamma) >= s
        hi = np.where(todo & sel, mid, hi)
        lo = np.where(todo & ~sel, mid, lo)
    return hi


def _select_many(a: np.ndarray, b: np.ndarray, n_sel: int, kmin: np.ndarray) -> np.ndarray:
    """Upper bounds on P[selection_score(Bin(n_sel, a), Bin(n_sel, b)) >= s] (``kmin[c]``: the
    smallest numerator count scoring >= s at denominator count c, :func:`_kmin_select`, defined
    for c up to the windows' ends), independent counts: exact sums over the denominator count
    inside a window, plus the whole probability outside it."""
    a = np.clip(a, 0.0, 1.0)
    b = np.clip(b, 0.0, 1.0)
    mu = n_sel * b
    lo, hi = _windows(mu, np.sqrt(mu * (1.0 - b)), top=n_sel)
    out = stats.binom.cdf(lo - 1, n_sel, b) + stats.binom.sf(hi, n_sel, b)
    for s, e in _chunks(hi - lo + 1):
        own, kd = _flat(lo[s:e], hi[s:e])
        pmf = stats.binom.pmf(kd, n_sel, b[s:e][own])
        hit = stats.binom.sf(kmin[kd] - 1, n_sel, a[s:e][own])
        out[s:e] += np.bincount(own, weights=pmf * hit, minlength=e - s)
    return np.clip(out, 0.0, 1.0)


def audit_power(mechanism: Any, witness: Any, *, samples: int, alpha: float = 0.05,
                selection: float = DEFAULT_SELECTION, eta: float = 5e-7, resolution: float = 0.5) -> float:
    """Lower bound on P[``audit(mechanism, witness.d1, witness.d2, samples=samples, alpha=alpha,
    events=...)`` is violated] (module docstring): the default ``events="all"`` for finite
    outputs, ``events="thresholds"`` for real outputs. ``witness`` has ``d1, d2, event,
    direction, p_num, p_den`` (a :class:`verifiers.zoo.ZooWitness`); its event must be a
    threshold, an atom or a single finite output. The witness event is one of the fixed reference
    events E* (the others: every grid threshold, law atom or finite output, both directions).
    ``resolution``: grid step in binomial standard deviations of the selection counts."""
    claim = mechanism.claim
    eps, delta = float(claim.epsilon), float(claim.delta)
    finite = is_finite(mechanism)
    if witness.event.kind not in ("le", "ge", "atom", "set"):
        raise ValueError(f"the witness event must be a threshold, an atom or a finite set, got {witness.event.kind!r}")
    if not (0.0 < eta < 1.0):
        raise ValueError(f"eta must be in (0, 1), got {eta!r}")
    if not (resolution > 0.0):
        raise ValueError(f"resolution must be > 0, got {resolution!r}")
    n_sel, n_cert = split_sizes(samples, selection)
    if n_cert < 1:
        raise ValueError(f"samples={samples} leaves no certification draws at selection={selection}")
    # Cells: (x_in, x_out) under d1 and (y_in, y_out) under d2 for every bracketing cell; reference
    # events E*: probabilities (r1, r2) under d1, d2, and whether E* is an atom (needs 2 copies).
    if finite:
        if not (callable(getattr(mechanism, "support", None)) and callable(getattr(mechanism, "log_prob", None))):
            raise ValueError(f"audit_power needs an exact law: {type(mechanism).__name__} declares finite outputs "
                             "but has no support(data)/log_prob(data)")
        sup = np.asarray(mechanism.support(witness.d1))
        if sup.ndim != 1:
            raise ValueError(f"audit_power enumerates single outputs: {type(mechanism).__name__} releases rows "
                             f"(support of shape {sup.shape}), whose events it cannot enumerate")
        if not np.array_equal(sup, np.asarray(mechanism.support(witness.d2))):
            raise ValueError("audit_power needs the same support under d1 and d2")
        if witness.event.kind != "set" or len(witness.event.values) != 1:
            # finite_candidates holds every observed output, but not every union of outputs
            raise ValueError("audit_power needs a single-output witness event for a finite mechanism")
        P1 = np.exp(mechanism.log_prob(witness.d1))
        P2 = np.exp(mechanism.log_prob(witness.d2))
        k = sup.size
        if k > 12:
            raise ValueError(f"audit_power enumerates subsets: k = {k} outputs is too many (<= 12)")
        masks = ((np.arange(1, 2**k - 1)[:, None] >> np.arange(k)[None, :]) & 1).astype(bool)
        m1, m2 = masks @ P1, masks @ P2
        in1 = out1 = np.clip(m1, 0, 1)
        in2 = out2 = np.clip(m2, 0, 1)
        shrinks = possible_shrinks(n_sel, "finite", k)
        slack = 0.0
        r1, r2 = np.clip(P1, 0, 1), np.clip(P2, 0, 1)  # every single output is a candidate once seen
        r_atom = np.zeros(k, dtype=bool)
    else:
        F1, at1 = _law_functions(mechanism, witness.d1)
        F2, at2 = _law_functions(mechanism, witness.d2)
        g = _quantile_grid([F1, F2], at1 + at2, n_sel, resolution)
        atoms = np.array(sorted(set(at1 + at2)), dtype=np.float64)
        parts1, parts2, ref1, ref2 = [], [], [], []
        for F, parts, ref in ((F1, parts1, ref1), (F2, parts2, ref2)):
            right = np.concatenate([[0.0], F(g), [1.0]])  # P[Y <= g_j] on the extended grid
            left = np.concatenate([[0.0], F(np.nextafter(g, -np.inf)), [1.0]])  # P[Y < g_j]
            # "le", t in the open cell (g_{j-1}, g_j): inner (-inf, g_{j-1}], outer (-inf, g_j)
            parts.append((right[:-1], left[1:]))
            # "le", t = g_j exactly (j = 1..G): the event (-inf, g_j] itself
            parts.append((right[1:-1], right[1:-1]))
            # "ge", t in (g_i, g_{i+1}): inner [g_{i+1}, inf), outer (g_i, inf)
            parts.append((1.0 - left[1:], 1.0 - right[:-1]))
            # "ge", t = g_i exactly
            parts.append((1.0 - left[1:-1], 1.0 - left[1:-1]))
            ref += [right[1:-1], 1.0 - left[1:-1]]
            # atoms: only the law's own atoms can repeat (elsewhere a repeat has probability 0)
            if atoms.size:
                mass = F(atoms) - F(np.nextafter(atoms, -np.inf))
                parts.append((mass, mass))
                ref.append(mass)
        in1 = np.clip(np.concatenate([a for a, _ in parts1]), 0, 1)
        out1 = np.clip(np.concatenate([b for _, b in parts1]), 0, 1)
        in2 = np.clip(np.concatenate([a for a, _ in parts2]), 0, 1)
        out2 = np.clip(np.concatenate([b for _, b in parts2]), 0, 1)
        shrinks = possible_shrinks(n_sel, "real", None, int(atoms.size), intervals=False)
        slack = float(threshold_gap(2 * n_sel) + 1) if 2 * n_sel > THRESHOLD_CAP else 0.0
        w_atom = witness.event.kind == "atom"
        # the witness event's probabilities, from the laws themselves (a threshold or an atom knows how)
        wp = [witness.event.probability(F) for F in (F1, F2)]
        r1 = np.clip(np.concatenate(ref1 + [[wp[0]]]), 0, 1)
        r2 = np.clip(np.concatenate(ref2 + [[wp[1]]]), 0, 1)
        r_atom = np.zeros(r1.size, dtype=bool)
        if atoms.size:
            r_atom[2 * g.size: 2 * g.size + atoms.size] = True
        r_atom[-1] = w_atom
    n_events = in1.size
    # Union quantiles of every cell's counts (all at once: eta/2 in total): 4 per row.
    eta_ref = eta / 6.0
    eta_cells = eta / (8.0 * n_events)

    def q_hi(p: np.ndarray, level: float) -> np.ndarray:
        return np.where(p > 0, stats.binom.isf(level, n_sel, np.clip(p, 0, 1)), 0.0)

    def q_lo(p: np.ndarray, level: float) -> np.ndarray:
        return np.where(p < 1, stats.binom.ppf(level, n_sel, np.clip(p, 0, 1)), float(n_sel))

    hi1, hi2 = q_hi(out1, eta_cells), q_hi(out2, eta_cells)
    lo1, lo2 = q_lo(in1, eta_cells), q_lo(in2, eta_cells)
    # Cells = (direction, row): numerator/denominator inner and outer probabilities, count bounds.
    num_in, num_out = np.concatenate([in1, in2]), np.concatenate([out1, out2])
    den_in, den_out = np.concatenate([in2, in1]), np.concatenate([out2, out1])
    num_hi, den_lo = np.concatenate([hi1, hi2]), np.concatenate([lo2, lo1])

    # Reference events E* (fixed, both directions): c_num >= q_lo(p_num) - slack, c_den <= q_hi(p_den).
    # Slack (a capped threshold list, events.threshold_gap): the nearest candidate threshold on the
    # side that shrinks E* loses at most gap + 1 numerator values and no denominator value; none
    # when E* holds at most TAIL_KEEP pooled values (every tail value is a candidate) or is an atom.
    rn = np.concatenate([r1, r2])
    rd = np.concatenate([r2, r1])
    ra = np.concatenate([r_atom, r_atom])
    cn_lo, cn_hi, cd_hi = q_lo(rn, eta_ref), q_hi(rn, eta_ref), q_hi(rd, eta_ref)
    by_tail = ~ra & (slack > 0) & (cn_hi + cd_hi <= TAIL_KEEP)
    sl = np.where(ra | by_tail, 0.0, slack)
    keep = ~ra | (cn_lo >= 2)  # an atom is a candidate only when seen at least twice
    c_num = np.where(keep, np.maximum(cn_lo - sl, 0.0), 0.0)
    c_den = cd_hi
    splits = [(alpha, 0.0)] if delta == 0.0 else [(alpha * w, alpha * (1 - w)) for w in ALPHA_SPLITS]

    def miss_ref(r: int, s: float, gamma: float) -> float:
        """Upper bound on P[E*'s candidate scores < s] (E* = reference r; independent counts)."""
        pn, pd, slk = float(rn[r]), float(rd[r]), float(sl[r])
        mu = n_sel * pd
        lo, hi = _windows(np.array([mu]), np.array([math.sqrt(mu * (1 - pd))]), top=n_sel)
        kd = np.arange(lo[0], hi[0] + 1)
        kmin = _kmin_select(s, kd, n_sel, n_cert, alpha, delta, gamma)
        if ra[r]:
            kmin = np.maximum(kmin, 2)
        pmf = stats.binom.pmf(kd, n_sel, pd)
        out = float(np.sum(pmf * stats.binom.cdf(kmin + slk - 1, n_sel, pn)))
        out += float(stats.binom.cdf(lo[0] - 1, n_sel, pd) + stats.binom.sf(hi[0], n_sel, pd))
        if by_tail[r]:
            out += 2 * eta_ref  # the pooled-count quantiles that justified slack 0
        return min(out, 1.0)

    fail = eta / 2.0  # the union quantiles of the cells
    for gamma in shrinks:
        scores = np.where(keep, selection_score(c_num, c_den, n_sel, n_cert, alpha, delta, shrink=gamma), -np.inf)
        r = int(np.argmax(scores))
        s0 = float(scores[r])
        if not (s0 >= 0.0):
            return 0.0
        if not finite and not (s0 > float(selection_score(3.0, 0.0, n_sel, n_cert, alpha, delta, shrink=gamma))):
            return 0.0  # a floating-point coincidence (a repeated value) could outscore E*
        # A: cells whose count bounds reach s0. On the union-quantile event and S* >= s0 (S* the
        # score of E*'s candidate), the selected (event, direction) lies in a cell of A.
        inA = selection_score(num_hi, den_lo, n_sel, n_cert, alpha, delta, shrink=gamma) >= s0
        ia = np.flatnonzero(inA)
        if ia.size == 0:
            return 0.0
        xa, ya = num_in[ia], den_out[ia]
        # Certification power of every cell of A: lower bounds from the Pareto frontier of worst
        # points (small x, large y; each cell is dominated by a frontier point), exact below 1 - 1e-13.
        order = np.lexsort((-ya, xa))
        Pxy = np.stack([xa[order], ya[order]], axis=1)
        front = Pxy[:, 1] > np.maximum.accumulate(np.concatenate([[-1.0], Pxy[:-1, 1]]))
        Fr = Pxy[front]
        DF = np.min([_detect_many(Fr[:, 0], Fr[:, 1], float(n_cert), eps, a1, a2, delta) for a1, a2 in splits], axis=0)
        i = np.searchsorted(Fr[:, 0], xa, side="right") - 1
        j = np.searchsorted(Fr[:, 1], ya, side="left")
        if np.any(i < 0) or np.any(j >= Fr.shape[0]) or np.any(j > i):
            raise AssertionError("audit_power: a cell is not dominated by the frontier")
        D = np.maximum(DF[i], DF[j])
        low = D < 1.0 - 1e-13
        if low.any():
            D[low] = np.min([_detect_many(xa[low], ya[low], float(n_cert), eps, a1, a2, delta)
                             for a1, a2 in splits], axis=0)
        # Score levels s_1 = s0 < ... < s_L (up to E*'s score at its median counts); s_{L+1} = inf.
        med_n = float(stats.binom.median(n_sel, rn[r])) - sl[r]
        med_d = float(stats.binom.median(n_sel, rd[r]))
        s_med = float(selection_score(max(med_n, 0.0), med_d, n_sel, n_cert, alpha, delta, shrink=gamma))
        levels = np.linspace(s0, s_med, LEVELS) if s_med > s0 else np.array([s0])
        miss = [miss_ref(r, float(v), gamma) for v in levels] + [1.0]
        # P[the selection picks cell c, and S* >= s0] <= u_c = sum_l min(P[S* < s_{l+1}],
        # P[S(c's count bounds) >= s_l]); the certification then fails with probability <= 1 - D_c
        # (fresh draws). Cells are disjoint (sum of those probabilities <= 1): the worst case is
        # the greedy fill of mass 1 by u_c in decreasing order of 1 - D_c. Cells with 1 - D_c < TAU
        # add at most TAU in total.
        top = np.flatnonzero(1.0 - D >= TAU)
        worst_rest = float(np.max(1.0 - D[1.0 - D < TAU], initial=0.0))
        charge = 0.0
        if top.size:
            a_, b_ = num_out[ia[top]], den_in[ia[top]]
            kmax = int(_windows(n_sel * b_, np.sqrt(n_sel * b_ * (1 - b_)), top=n_sel)[1].max())
            u = np.zeros(top.size)
            for li, v in enumerate(levels):
                kmin = _kmin_select(float(v), np.arange(kmax + 1), n_sel, n_cert, alpha, delta, gamma)
                u += np.minimum(miss[li + 1], _select_many(a_, b_, n_sel, kmin))
            loss = 1.0 - D[top]
            o = np.argsort(-loss, kind="stable")
            w = np.minimum(u[o], np.maximum(1.0 - np.concatenate([[0.0], np.cumsum(u[o])[:-1]]), 0.0))
            charge = float(np.sum(w * loss[o]))
        best = miss[0] + charge + worst_rest
        fail += best
    return max(0.0, 1.0 - fail)


#: Score levels between s0 and E*'s median score; cells whose certification fails with
#: probability below TAU are charged TAU in total.
LEVELS = 10
TAU = 1e-12
