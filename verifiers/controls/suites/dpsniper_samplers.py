"""The samplers of DP-Sniper's evaluation mechanisms (:mod:`verifiers.controls.suites.dpsniper`), each
``fn(data, n, rng)`` as :func:`verifiers.wrap` takes it: the input checks, the Laplace family and
noisy max, Balcer-Vadhan's GeoSample, the sparse vector technique and RAPPOR (its MurmurHash3 Bloom
filter included), with the exact laws the entries' true epsilons are computed from."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["murmur3_32", "bloom_bits", "geo_sample_cdf", "geo_sample_pmf", "rappor_bit_probabilities"]


# --------------------------------------------------------------------------------------------
# input checks

def _queries(data: Any, d: int) -> np.ndarray:
    """The query-answer vector: exactly ``d`` finite reals (``ValueError`` otherwise)."""
    try:
        q = np.asarray(data, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"data must be a 1-D array of {d} query answers (real numbers): {exc}") from None
    if q.shape != (d,):
        raise ValueError(f"data must be a 1-D array of {d} query answers (DP-Sniper's input length), "
                         f"got shape {q.shape}")
    if not np.all(np.isfinite(q)):
        raise ValueError(f"data must be finite, got non-finite entries at {np.flatnonzero(~np.isfinite(q)).tolist()}")
    return q


def _scalar(data: Any) -> float:
    """One finite real query answer f(D) (a scalar or a length-1 array)."""
    try:
        a = np.asarray(data, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"data must be one real query answer f(D): {exc}") from None
    if a.size != 1 or a.ndim > 1:
        raise ValueError(f"data must be one query answer f(D) (a scalar), got shape {a.shape}")
    x = float(a.reshape(()))
    if not math.isfinite(x):
        raise ValueError(f"data must be finite, got {x!r}")
    return x


def _integer_in(data: Any, lo: int, hi: int) -> int:
    """One integer-valued answer in [lo, hi]."""
    x = _scalar(data)
    if x != round(x) or not lo <= x <= hi:
        raise ValueError(f"data must be an integer in [{lo}, {hi}], got {x!r}")
    return int(round(x))


# --------------------------------------------------------------------------------------------
# Laplace family

def _laplace(data: Any, n: int, rng: np.random.Generator, *, scale: float) -> np.ndarray:
    return _scalar(data) + rng.laplace(scale=scale, size=n)


def _laplace_copies(data: Any, n: int, rng: np.random.Generator, *, scale: float, copies: int) -> np.ndarray:
    """``copies`` independent Laplace releases of the same scalar, ``(n, copies)``."""
    return _scalar(data) + rng.laplace(scale=scale, size=(n, copies))


def _noisy_hist(data: Any, n: int, rng: np.random.Generator, *, scale: float, d: int) -> np.ndarray:
    return _queries(data, d)[None, :] + rng.laplace(scale=scale, size=(n, d))


def _prefix_sum(data: Any, n: int, rng: np.random.Generator, *, scale: float, d: int) -> np.ndarray:
    q = _queries(data, d)
    return np.cumsum(q[None, :] + rng.laplace(scale=scale, size=(n, d)), axis=1)


def _noisy_max(data: Any, n: int, rng: np.random.Generator, *, noise: str, scale: float, d: int,
               release: str) -> np.ndarray:
    """argmax (int64 index) or max (value) of q + noise; ties have probability 0."""
    q = _queries(data, d)
    z = rng.laplace(scale=scale, size=(n, d)) if noise == "laplace" else rng.exponential(scale=scale, size=(n, d))
    noisy = q[None, :] + z
    return np.argmax(noisy, axis=1).astype(np.int64) if release == "index" else np.max(noisy, axis=1)


# --------------------------------------------------------------------------------------------
# truncated geometric (Balcer-Vadhan GeoSample)

def _geo_k(epsilon: float) -> int:
    # DP-Sniper's k = ceil(ln(2 / epsilon)), natural logarithm (k = 3 at epsilon = 0.1).
    return math.ceil(math.log(2.0 / epsilon))


def geo_sample_cdf(c: int, n: int, k: int) -> tuple[list[int], int]:
    """GeoSample's integer CDF F(0..n) for count ``c`` and its denominator d (exact integers).

    F(z) = 2^{k(c-z)} (2^k+1)^{n-(c-z)} for z < c; d - 2^{k(z-c+1)} (2^k+1)^{n-1-(z-c)} for
    c <= z < n; F(n) = d = (2^{k+1}+1) (2^k+1)^{n-1}. The output is the smallest z with F(z) >= u,
    u uniform on {1, ..., d}: a two-sided geometric law with ratio 2^k/(2^k+1), truncated to [0, n].
    """
    if not 0 <= c <= n:
        raise ValueError(f"c must be in [0, {n}], got {c!r}")
    b = 2 ** k + 1
    d = (2 ** (k + 1) + 1) * b ** (n - 1)
    f = [2 ** (k * (c - z)) * b ** (n - (c - z)) if z < c else d - 2 ** (k * (z - c + 1)) * b ** (n - 1 - (z - c))
         for z in range(n)]
    return f + [d], d


def geo_sample_pmf(c: int, n: int = 5, k: int = 3) -> np.ndarray:
    """The exact law of GeoSample's output 0..n for count ``c`` (float64)."""
    f, d = geo_sample_cdf(c, n, k)
    return np.array([(b - a) / d for a, b in zip([0] + f, f)], dtype=np.float64)


def _geo_true_epsilon(n: int, k: int) -> float:
    """max over adjacent counts c, c+1 and outputs z of |ln P(z|c) - ln P(z|c+1)| (exact ints)."""
    worst = 0.0
    for c in range(n):
        f1, _ = geo_sample_cdf(c, n, k)
        f2, _ = geo_sample_cdf(c + 1, n, k)
        p1 = [b - a for a, b in zip([0] + f1, f1)]
        p2 = [b - a for a, b in zip([0] + f2, f2)]
        worst = max(worst, max(abs(math.log(a) - math.log(b)) for a, b in zip(p1, p2)))
    return worst


def _truncated_geometric(data: Any, n: int, rng: np.random.Generator, *, count: int, k: int) -> np.ndarray:
    c = _integer_in(data, 0, count)
    f, d = geo_sample_cdf(c, count, k)
    u = rng.integers(1, d + 1, size=n)
    return np.searchsorted(np.array(f, dtype=np.int64), u, side="left").astype(np.int64)


# --------------------------------------------------------------------------------------------
# sparse vector technique (Lyu, Su, Li 2017, Algorithms 1-6; ShadowDP's NumericalSVT)

def _not_answered(above: np.ndarray, c: int) -> np.ndarray:
    """True where the run had already reported c queries above (it stopped)."""
    earlier = np.cumsum(above, axis=1) - above
    return earlier >= c


def _above(q: np.ndarray, n: int, rng: np.random.Generator, *, threshold: float, rho_scale: float,
           nu_scale: float) -> tuple[np.ndarray, np.ndarray]:
    """One threshold noise rho per run, one Laplace nu per query (none if nu_scale == 0):
    returns (q + nu, q + nu >= T + rho), each ``(n, d)``."""
    rho = rng.laplace(scale=rho_scale, size=(n, 1))
    noisy = np.broadcast_to(q, (n, q.size)) if nu_scale == 0 else q[None, :] + rng.laplace(scale=nu_scale,
                                                                                             size=(n, q.size))
    return noisy, noisy >= threshold + rho


def _svt_labels(data: Any, n: int, rng: np.random.Generator, *, d: int, c: int | None, **svt: float) -> np.ndarray:
    """1 above, 0 below, -1 not answered (int64 ``(n, d)``); ``c=None``: no cutoff."""
    _, above = _above(_queries(data, d), n, rng, **svt)
    out = above.astype(np.int64)
    if c is not None:
        out[_not_answered(above, c)] = -1
    return out


def _svt_values(data: Any, n: int, rng: np.random.Generator, *, d: int, c: int, **svt: float) -> np.ndarray:
    """q_i + nu_i where reported above and answered, NaN elsewhere (float64 ``(n, d)``)."""
    noisy, above = _above(_queries(data, d), n, rng, **svt)
    return np.where(above & ~_not_answered(above, c), noisy, np.nan)


def _svt2_labels(data: Any, n: int, rng: np.random.Generator, *, d: int, c: int, threshold: float,
                 rho_scale: float, nu_scale: float) -> np.ndarray:
    """Lyu Alg. 2: the threshold noise is redrawn after every answer above (loop over the d queries)."""
    q = _queries(data, d)
    rho = rng.laplace(scale=rho_scale, size=n)
    noisy = q[None, :] + rng.laplace(scale=nu_scale, size=(n, d))
    above = np.zeros((n, d), dtype=bool)
    for i in range(d):
        above[:, i] = noisy[:, i] >= threshold + rho
        fresh = rng.laplace(scale=rho_scale, size=n)
        rho = np.where(above[:, i], fresh, rho)
    out = above.astype(np.int64)
    out[_not_answered(above, c)] = -1
    return out


def _numerical_svt(data: Any, n: int, rng: np.random.Generator, *, d: int, c: int, threshold: float,
                   rho_scale: float, nu_scale: float, value_scale: float) -> np.ndarray:
    """ShadowDP's NumericalSVT: above -> q_i + fresh Lap(value_scale); NaN below / not answered."""
    q = _queries(data, d)
    _, above = _above(q, n, rng, threshold=threshold, rho_scale=rho_scale, nu_scale=nu_scale)
    value = q[None, :] + rng.laplace(scale=value_scale, size=(n, d))
    return np.where(above & ~_not_answered(above, c), value, np.nan)


def _svt34_parallel(data: Any, n: int, rng: np.random.Generator, *, svt3: dict, svt4: dict) -> np.ndarray:
    """SVT3 and SVT4 run independently on the same queries: ``(n, 2d)`` float64."""
    return np.concatenate([_svt_values(data, n, rng, **svt3),
                           _svt_labels(data, n, rng, **svt4).astype(np.float64)], axis=1)


# --------------------------------------------------------------------------------------------
# RAPPOR (Erlingsson, Pihur, Korolova 2014)

_M32 = 0xFFFFFFFF


def _rotl32(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def _fmix32(h: int) -> int:
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & _M32
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & _M32
    return h ^ (h >> 16)


def _mix_block(k: int) -> int:
    k = (k * 0xCC9E2D51) & _M32
    return (_rotl32(k, 15) * 0x1B873593) & _M32


def murmur3_32(key: bytes, seed: int = 0) -> int:
    """MurmurHash3 x86 32-bit of ``key`` (unsigned), the Bloom-filter hash of DP-Sniper's RAPPOR."""
    h = seed & _M32
    nblocks = len(key) // 4
    for i in range(nblocks):
        h ^= _mix_block(int.from_bytes(key[4 * i:4 * i + 4], "little"))
        h = (_rotl32(h, 13) * 5 + 0xE6546B64) & _M32
    tail = key[4 * nblocks:]
    if tail:
        h ^= _mix_block(int.from_bytes(tail, "little"))
    return _fmix32(h ^ len(key))


def bloom_bits(value: int, n_hashes: int = 4, filter_size: int = 20) -> frozenset[int]:
    """The Bloom-filter bits of an integer client value: the *signed* 32-bit MurmurHash3 of its
    decimal string with seeds 0..n_hashes-1, modulo ``filter_size`` (Python's non-negative %)."""
    out = set()
    for seed in range(n_hashes):
        h = murmur3_32(str(int(value)).encode("utf-8"), seed)
        out.add((h - (1 << 32) if h >= 1 << 31 else h) % filter_size)
    return frozenset(out)


def rappor_bit_probabilities(f: float, p: float | None, q: float | None) -> tuple[float, float]:
    """P[reported bit = 1] for a Bloom bit that is 1 and for one that is 0 (q*, p*).

    Permanent response: 1 w.p. f/2, 0 w.p. f/2, the true bit w.p. 1 - f; instantaneous response
    (``p``/``q`` not None): 1 w.p. q if the permanent bit is 1, w.p. p if it is 0.
    """
    one, zero = 1.0 - f / 2.0, f / 2.0
    if p is None or q is None:
        return one, zero
    return one * q + (1.0 - one) * p, zero * q + (1.0 - zero) * p


def _rappor(data: Any, n: int, rng: np.random.Generator, *, lo: int, hi: int, n_hashes: int, filter_size: int,
            f: float, p: float | None, q: float | None) -> np.ndarray:
    """Reported bits ``(n, filter_size)`` int64; the permanent response is redrawn per draw, as
    DP-Sniper samples it (each draw is one client's first report)."""
    value = _integer_in(data, lo, hi)
    bloom = np.zeros(filter_size, dtype=bool)
    bloom[list(bloom_bits(value, n_hashes, filter_size))] = True
    u = rng.random((n, filter_size))
    prr = np.where(u < f / 2.0, True, np.where(u < f, False, bloom[None, :]))
    if p is None or q is None:
        return prr.astype(np.int64)
    v = rng.random((n, filter_size))
    return (v < np.where(prr, q, p)).astype(np.int64)


def _rappor_max_symdiff(lo: int, hi: int, n_hashes: int, filter_size: int) -> int:
    bits = [bloom_bits(v, n_hashes, filter_size) for v in range(lo, hi + 1)]
    return max(len(a ^ b) for a in bits for b in bits)
