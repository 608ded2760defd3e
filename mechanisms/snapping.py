"""``snapping``: Mironov's snapping mechanism, a Laplace mechanism that is private in floating point.

Releases ``clamp_B(round_Lam(clamp_B(f(D)) + S * lam * LN(U)))`` computed in IEEE double
arithmetic (Mironov, "On significance of the least significant bits for differential privacy",
CCS 2012, Section 5.2), with

* ``U`` uniform on the doubles of (0, 1), each double ``u`` drawn with probability ulp(u) (the
  spacing above it): a real uniform rounded down to a double (:func:`sample_uniform_doubles`);
* ``S`` a uniform random sign, ``lam`` the Laplace scale;
* ``LN`` a correctly rounded natural logarithm (:func:`log_correctly_rounded`);
* ``round_Lam`` rounding to the nearest multiple of ``Lam``, the smallest power of two >= lam
  (ties up), computed exactly;
* ``clamp_B`` clamping to [-B, B].

Every output is a multiple of ``Lam`` or +-B: the low-order bits that betray ``f(D)`` in a
textbook ``f(D) + Laplace`` release (docs/floating-point.md) are rounded away.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal, localcontext
from fractions import Fraction
from typing import Any, ClassVar

import numpy as np

from dpharness.mechanisms.base import Mechanism, ParamError, PrivacyClaim, as_rng, check_epsilon, check_positive, check_present, check_size
from dpharness.mechanisms.laws import GridRunsLaw
from dpharness.mechanisms.registry import register

__all__ = ["Snapping", "log_correctly_rounded", "sample_uniform_doubles", "snap_parameters"]

#: The theorem's rounding term: eta = 2^-53 (largest eta with 1 + eta == 1 in doubles); the
#: proof's (1 + 12 B eta)/lam + 2 eta is at most (1 + 2^-49 B)/lam when B > lam.
_THEOREM_TERM = Fraction(1, 2**49)
#: The theorem's range of the bound: lam < B < 2^46 lam.
_MAX_BOUND_RATIO = 2**46
#: Parameter ranges that keep every intermediate double normal (no overflow, no underflow) both in
#: the mechanism's units and in units of the sensitivity's power of two (see ``Snapping``).
_EXP_RANGE = 400


# --------------------------------------------------------------------------------------------------
# U*: uniform on the doubles of (0, 1) with probability ulp(u)


def _bit_length(w: np.ndarray) -> np.ndarray:
    """Bit length of each uint64 (0 for 0), exactly: each 32-bit half converts to float64 exactly."""
    hi = (w >> np.uint64(32)).astype(np.float64)
    lo = (w & np.uint64(0xFFFFFFFF)).astype(np.float64)
    return np.where(hi > 0, 32 + np.frexp(hi)[1], np.frexp(lo)[1]).astype(np.int64)


def sample_uniform_doubles(n: int, rng: Any) -> np.ndarray:
    """``n`` draws of U*: a real V uniform on (0, 1) rounded down to a double (never 0).

    P[U = u] = ulp(u), the spacing from u to the next double up: the binade [2^-e, 2^(1-e)) has
    probability 2^-e (``e`` - 1 is the number of leading zero bits of an infinite random bit
    string, read 64 bits at a time) and its 2^52 doubles are equally likely (52 uniform bits of
    significand). Below 2^-1022 (probability 2^-1022) the subnormal grid 2^-1074 Z is used, and a
    draw that would round to 0 is redrawn. Only ``rng.integers`` is called (exact integers).
    """
    rng = as_rng(rng)
    out = np.empty(n, dtype=np.float64)
    todo = np.arange(n)
    while todo.size:
        zeros = np.zeros(todo.size, dtype=np.int64)
        pending = np.arange(todo.size)  # positions (into todo) whose leading 1 is not found yet
        while pending.size:
            w = rng.integers(0, 2**64, size=pending.size, dtype=np.uint64)
            bl = _bit_length(w)
            zeros[pending] += 64 - bl
            # stop at the first 1 bit, or once past 1022 zeros (the subnormal range: V < 2^-1022)
            pending = pending[(bl == 0) & (zeros[pending] < 1022)]
        mant = rng.integers(0, 2**52, size=todo.size, dtype=np.int64)
        normal = zeros < 1022
        e = zeros + 1  # V in [2^-e, 2^(1-e)): U = (2^52 + mant) 2^-(52 + e), exact
        u = np.where(normal, np.ldexp((mant + 2**52).astype(np.float64), np.where(normal, -(52 + e), 0)),
                     np.ldexp(mant.astype(np.float64), -1074))
        ok = u > 0  # a subnormal draw of mant = 0 would round V to 0: redraw it
        out[todo[ok]] = u[ok]
        todo = todo[~ok]
    return out


# --------------------------------------------------------------------------------------------------
# LN: correctly rounded natural logarithm

#: The long double's log is trusted to within this many long-double ulps (glibc's x86 logl is
#: documented within 1-2; tests/mechanisms/test_float_safe.py measures it against a 50-digit
#: decimal log). A result that close to a rounding boundary of the double is decided exactly.
_LOGL_ULPS = 4
_LONG_DOUBLE_OK = np.finfo(np.longdouble).nmant >= 63


def _log_exact(v: float) -> float:
    """ln(v) correctly rounded to a double, from a 50-digit decimal logarithm (itself correctly
    rounded): 166 bits, far more than the 118 that the hardest double arguments of ln need
    (Lefevre & Muller's worst cases), so the rounding decision made on it is the exact one."""
    with localcontext() as ctx:
        ctx.prec = 50
        d = Fraction(Decimal(v).ln())
    c = float(d)  # the nearest double to d (Fraction -> float is correctly rounded)
    for _ in range(2):  # move one double if d and the nearest double to ln v straddle a midpoint
        lo, hi = math.nextafter(c, -math.inf), math.nextafter(c, math.inf)
        if d < (Fraction(c) + Fraction(lo)) / 2:
            c = lo
        elif d > (Fraction(c) + Fraction(hi)) / 2:
            c = hi
        else:
            break
    return c


def log_correctly_rounded(x: Any) -> np.ndarray:
    """Natural log of positive finite doubles, correctly rounded to nearest (Mironov's LN).

    numpy's ``log`` is faithful but not correctly rounded (0.58 ulp measured here). We evaluate
    the log in long double (64-bit significand on x86: 11 more bits than a double) and round that
    to a double; the result is the correctly rounded one unless the long-double value lies within
    ``_LOGL_ULPS`` long-double ulps of a midpoint between two doubles (about 0.4% of draws), and
    those draws are recomputed exactly (:func:`_log_exact`). On platforms whose long double is a
    plain double every draw takes the exact (slow) path.

    Residual assumption: the platform's long-double log is within 4 long-double ulps of ln x.
    """
    x = np.asarray(x, dtype=np.float64)
    if x.size and not (np.all(np.isfinite(x)) and np.all(x > 0)):
        raise ValueError("log_correctly_rounded needs positive finite doubles")
    flat = x.reshape(-1)
    if _LONG_DOUBLE_OK:
        yl = np.log(flat.astype(np.longdouble))
        y = yl.astype(np.float64)
        yd = y.astype(np.longdouble)
        # midpoints to the neighbouring doubles: exact in long double (54 significant bits)
        mid_lo = (yd + np.nextafter(y, -np.inf).astype(np.longdouble)) / 2
        mid_hi = (yd + np.nextafter(y, np.inf).astype(np.longdouble)) / 2
        margin = _LOGL_ULPS * np.spacing(np.abs(yl))
        hard = (np.abs(yl - mid_lo) <= margin) | (np.abs(yl - mid_hi) <= margin)
    else:  # pragma: no cover - platforms without an extended long double
        y = np.log(flat)
        hard = np.ones(flat.shape, dtype=bool)
    for i in np.flatnonzero(hard):
        y[i] = _log_exact(float(flat[i]))
    return y.reshape(x.shape)


# --------------------------------------------------------------------------------------------------
# calibration


def _pow2_at_least(x: float) -> float:
    """The smallest power of two >= x (x > 0 finite), exactly."""
    m, e = math.frexp(x)  # x = m 2^e, m in [0.5, 1)
    return math.ldexp(1.0, e - 1) if m == 0.5 else math.ldexp(1.0, e)


def snap_parameters(epsilon: float, sensitivity: float, bound: float) -> tuple[float, float, float, float]:
    """(unit, lam, Lam, epsilon_bound) of the snapping mechanism for a target epsilon.

    ``unit`` is the smallest power of two >= sensitivity. Mironov's theorem is for sensitivity 1;
    dividing f, B and lam by the power of two ``unit`` is exact in floating point, so the
    mechanism run in our units is exactly ``unit`` times the mechanism run in units of ``unit``
    (where f has sensitivity <= 1), and the theorem gives unit/lam + 2^-49 B/lam. ``lam`` is the
    smallest double with (unit + 2^-49 B)/lam <= epsilon; ``epsilon_bound`` is that value (<= epsilon).
    """
    unit = _pow2_at_least(sensitivity)
    top = Fraction(unit) + Fraction(bound) * _THEOREM_TERM
    exact = top / Fraction(epsilon)
    lam = float(exact)
    if Fraction(lam) < exact:
        lam = math.nextafter(lam, math.inf)
    bound_eps = top / Fraction(lam)
    eb = float(bound_eps)
    if Fraction(eb) < bound_eps:
        eb = math.nextafter(eb, math.inf)
    return unit, lam, _pow2_at_least(lam), min(eb, float(epsilon))


def _round_half_up(q: np.ndarray) -> np.ndarray:
    """floor(q + 1/2) exactly, as doubles. (Computing q + 0.5 in floating point is wrong, e.g. for
    q = 0.49999999999999994.) q - floor(q) is exact whenever the test against 1/2 depends on it:
    by Sterbenz's lemma for q >= 1 or q <= -1/2, and for q in (-1/2, 0) it is > 1/2 however it
    rounds."""
    k = np.floor(q)
    return k + ((q - k) >= 0.5)


def _check_scalar(x: Any, name: str) -> float:
    check_present(x, name, "one real number, the query answer f(D)")
    try:
        arr = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError):
        raise ParamError(name, f"{name} must be one real number, got {x!r}") from None
    if arr.size != 1:
        raise ParamError(name, f"{name} must be one real number, got an array of shape {arr.shape}")
    v = float(arr.reshape(()))
    if not math.isfinite(v):
        raise ParamError(name, f"{name} must be finite, got {v!r}")
    return v


@register("snapping")
@dataclass(frozen=True)
class Snapping(Mechanism):
    """Mironov's snapping mechanism: Laplace noise, snapped to a power-of-two grid, clamped to [-B, B].

    Data: the scalar query answer f(D). Output: ``clamp_B(round_Lam(clamp_B(f(D)) + S lam LN(U)))``
    (module docstring), a multiple of Lam = the smallest power of two >= lam, or +-B.

    Claim (``claim``): ``epsilon``-DP under ``value`` neighbours (|f(D) - f(D')| <= sensitivity), in
    floating point: Mironov (CCS 2012, Section 5.2) proves that for sensitivity 1 and
    lam < B < 2^46 lam the mechanism computed in IEEE doubles is (1/lam + 2^-49 B/lam)-DP (the
    proof's last line is (1 + 12 B eta)/lam + 2 eta with eta = 2^-53). With u the smallest power of
    two >= sensitivity the mechanism is exactly u times the one run in units of u (scaling by a
    power of two commutes with rounding), so it is (u + 2^-49 B)/lam-DP; ``lam`` is calibrated as
    the smallest double making that <= epsilon (``epsilon_bound`` is the value reached). The
    constructor refuses parameters outside lam < B < 2^46 lam.

    Assumptions (docs/mechanisms.md, "snapping"): U* with P[U = u] = ulp(u) (exact, from random
    bits); LN correctly rounded (long-double log plus an exact decimal fallback near rounding
    boundaries: the one residual assumption is that the platform's long-double log errs by less
    than 4 long-double ulps); IEEE double arithmetic with round-to-nearest (numpy's). Inputs with
    |f| < u 2^-1022 (subnormal in units of u, only when sensitivity > 1) are first rounded down to
    a multiple of u 2^-1074, which keeps the sensitivity (the rounding is monotone and commutes
    with shifts by the sensitivity) and keeps the exact-scaling argument valid. The randomness is
    numpy's seedable PRNG, not a cryptographic one (mechanisms/base.py).

    ``distribution(data)`` is the law of the same mechanism in exact real arithmetic (a
    :class:`~mechanisms.laws.GridRunsLaw` on the multiples of Lam; needs B to be a multiple of
    Lam); the float mechanism's law differs from it only in the last bits of each probability.
    """

    epsilon: float
    sensitivity: float = 1.0
    bound: float = 1024.0

    kind: ClassVar[str] = "real"

    def __post_init__(self) -> None:
        eps = check_epsilon(self.epsilon)
        sens = check_positive(self.sensitivity, "sensitivity")
        b = check_positive(self.bound, "bound")
        object.__setattr__(self, "epsilon", eps)
        object.__setattr__(self, "sensitivity", sens)
        object.__setattr__(self, "bound", b)
        if not 2.0**-_EXP_RANGE <= sens <= 2.0**_EXP_RANGE:
            raise ParamError("sensitivity", f"sensitivity must be between 2^-{_EXP_RANGE} and 2^{_EXP_RANGE}, got {sens!r}")
        unit, lam, snap, eb = snap_parameters(eps, sens, b)
        if not 2.0**-_EXP_RANGE <= lam / unit <= 2.0**_EXP_RANGE:
            raise ParamError("epsilon", f"epsilon must be between about 2^-{_EXP_RANGE} and 2^{_EXP_RANGE} (the noise scale "
                             f"relative to the sensitivity), got epsilon={eps!r}")
        if not lam < b < _MAX_BOUND_RATIO * lam:
            raise ParamError(
                "bound",
                f"bound must satisfy lam < bound < 2^46 lam (the range of Mironov's theorem), where "
                f"lam = (sensitivity' + 2^-49 bound)/epsilon = {lam!r} is the Laplace scale (sensitivity' = {unit!r}, "
                f"the power of two >= sensitivity); got bound={b!r}: "
                + ("raise the bound or epsilon" if b <= lam else "lower the bound or epsilon"))
        object.__setattr__(self, "_unit", unit)
        object.__setattr__(self, "_lam", lam)
        object.__setattr__(self, "_snap", snap)
        object.__setattr__(self, "_eps_bound", eb)

    # -- derived parameters -------------------------------------------------------------------

    @property
    def scale(self) -> float:
        """The Laplace scale lam = (u + 2^-49 B) / epsilon, rounded up to a double."""
        return self._lam  # type: ignore[attr-defined]

    @property
    def snap(self) -> float:
        """Lam: the smallest power of two >= lam; outputs are multiples of it (or +-B)."""
        return self._snap  # type: ignore[attr-defined]

    @property
    def unit(self) -> float:
        """u: the smallest power of two >= sensitivity (the theorem is applied in units of u)."""
        return self._unit  # type: ignore[attr-defined]

    @property
    def epsilon_bound(self) -> float:
        """Mironov's bound (u + 2^-49 B)/lam for these parameters (<= epsilon, rounded up)."""
        return self._eps_bound  # type: ignore[attr-defined]

    @property
    def lower(self) -> float:
        return -self.bound

    @property
    def upper(self) -> float:
        return self.bound

    @property
    def claim(self) -> PrivacyClaim:
        return PrivacyClaim(self.epsilon, neighbours="value", sensitivity=self.sensitivity)

    @classmethod
    def example(cls) -> tuple["Snapping", Any]:
        return cls(epsilon=1.0, sensitivity=1.0, bound=1024.0), 0.0

    # -- the mechanism --------------------------------------------------------------------------

    def _input(self, data: Any) -> float:
        """clamp_B(f(D)), rounded down to a multiple of u 2^-1074 when it is subnormal in units of u."""
        c = min(max(_check_scalar(data, "data (f(D))"), -self.bound), self.bound)
        u = self.unit
        if u > 1.0 and 0.0 < abs(c) < u * 2.0**-1022:
            g = Fraction(u) * Fraction(1, 2**1074)
            c = float(math.floor(Fraction(c) / g) * g)  # an exact double: < 2^52 multiples of u 2^-1074
        return c + 0.0  # -0.0 -> +0.0

    def sample(self, data: Any, size: Any = None, rng: Any = None) -> np.ndarray:
        shape = check_size(size)
        rng = as_rng(rng)
        c = self._input(data)
        n = math.prod(shape) if shape else 1
        u = sample_uniform_doubles(n, rng)
        sign = (2 * rng.integers(0, 2, size=n) - 1).astype(np.float64)
        x = c + (sign * self.scale) * log_correctly_rounded(u)  # IEEE: S (x) lam (x) LN(U), then (+)
        k = _round_half_up(x / self.snap)  # x / Lam is exact: a power of two, no underflow in range
        out = np.clip(k * self.snap, -self.bound, self.bound) + 0.0  # k Lam exact (|k| < 2^53)
        return out.reshape(shape) if shape else out[0]

    # -- exact law (real arithmetic) ------------------------------------------------------------

    def distribution(self, data: Any) -> GridRunsLaw:
        """The law in exact real arithmetic on the grid of multiples of Lam (B a multiple of Lam).

        With c = clamp_B(f), k0 the bucket of c (nearest multiple, ties up) and u, v its distances
        to the bucket's lower and upper edges, bucket k0 + j (j >= 1) has mass
        exp(-(v + (j-1) Lam)/lam) (1 - exp(-Lam/lam)) / 2 (geometric in j), symmetrically below,
        and the buckets beyond +-B pile up in atoms at +-B.
        """
        c = self._input(data)
        lam, snap = self.scale, self.snap
        kb = self.bound / snap
        if kb != math.floor(kb):
            raise ValueError(f"the exact law needs bound to be a multiple of the snapping step Lam={snap!r}, "
                             f"got bound={self.bound!r}")
        K = int(kb)
        q = Fraction(c) / Fraction(snap)
        k0 = math.floor(q + Fraction(1, 2))
        lo_edge = float((q - k0 + Fraction(1, 2)) * Fraction(snap))  # u: distance to the lower edge
        up_edge = snap - lo_edge  # v: distance to the upper edge (in (0, Lam])
        r = snap / lam
        log_half = math.log(0.5)
        log_bucket = math.log(-math.expm1(-r))
        first, count, lw, ratio = [], [], [], []

        def run(f: int, n: int, w: float, s: float) -> None:
            if n > 0:
                first.append(f)
                count.append(n)
                lw.append(w)
                ratio.append(s)

        if k0 > -K:  # lower atom: P[L < -(u + (k0 + K - 1) Lam)]
            run(-K, 1, log_half - (lo_edge + (k0 + K - 1) * snap) / lam, 0.0)
            # buckets -K+1 .. k0-1: bucket k0 - j has mass e^{-(u + (j-1) Lam)/lam} (1 - e^{-r}) / 2
            run(-K + 1, k0 + K - 1, log_half - (lo_edge + (k0 + K - 2) * snap) / lam + log_bucket, r)
        if -K < k0 < K:
            centre = math.log(-0.5 * math.expm1(-lo_edge / lam) - 0.5 * math.expm1(-up_edge / lam))
        elif k0 >= K:  # everything at or above the bucket's lower edge goes to B
            centre = math.log1p(-0.5 * math.exp(-lo_edge / lam))
        else:
            centre = math.log1p(-0.5 * math.exp(-up_edge / lam))
        run(min(max(k0, -K), K), 1, centre, 0.0)
        if k0 < K:
            run(k0 + 1, K - k0 - 1, log_half - up_edge / lam + log_bucket, -r)
            run(K, 1, log_half - (up_edge + (K - k0 - 1) * snap) / lam, 0.0)
        return GridRunsLaw.from_log_weights(0.0, snap, first, count, lw, ratio)

    def cdf(self, data: Any, x: Any) -> np.ndarray:
        return self.distribution(data).cdf(x)
