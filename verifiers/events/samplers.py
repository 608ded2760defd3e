"""Which doubles a common noise sampler can output around a known centre (the data of
:mod:`verifiers.events.reachable`).

numpy's ``Generator.random()`` (and ``RandomState.random_sample``) returns ``U = k 2^-53`` for an
integer ``k``; every inverse-CDF sampler built on it outputs a function of ``k`` evaluated in
double arithmetic, so the doubles it can release near a centre ``c`` form a sparse, computable set.
Each model below says, for every output ``y``, whether some ``k`` gives exactly ``y``: it inverts the
sampler in real arithmetic to a first guess of ``k`` and evaluates the sampler's own double
operations, in its own order, on the integers around that guess.

Models (``MODELS``):

* ``"laplace"`` -- ``Generator.laplace(c, b)`` / ``RandomState.laplace`` / ``c + laplace(0, b)``:
  ``c - b*log((2 - U) - U)`` for ``U >= 1/2``, ``c + b*log(U + U)`` otherwise (numpy's
  ``random_laplace``);
* ``"laplace_scaled"`` -- ``scipy.stats.laplace.rvs(loc=c, scale=b)``: numpy's standard Laplace,
  then ``* b + c``;
* ``"laplace_textbook"`` -- the hand-written inverse CDF ``c - b*sign(u)*log(1 - 2|u|)`` with
  ``u = U - 1/2`` (either sign convention, any order of ``b`` and ``sign(u)``): ``1 - 2|u|`` is
  exactly ``x = j 2^-52`` on both branches, so the release is ``c -+ b*log(x)`` -- numpy's own
  ``U >= 1/2`` branch rounds ``(2 - U) - U`` instead and misses about a tenth of these outputs;
* ``"exponential"`` -- ``c + b * (-log(1 - U))`` (``RandomState.exponential``, the textbook
  inverse CDF);
* ``"laplace_textbook_log1p"`` -- the same inverse CDF written ``c - b*sign(u)*log1p(-2|u|)``:
  ``z = 2|u| = j 2^-52`` exactly, so the release is ``c -+ b*log1p(-z)``, which rounds otherwise;
* ``"signed_exponential"`` -- a Laplace written as an exponential with a random sign,
  ``c + s * b * (-log(U))`` with ``s = +-1`` from a second draw (``log(U)`` or ``log(1 - U)``: both
  are ``log(x)`` for ``x = k 2^-53``, and a sign or a negation is exact): ``c -+ b*log(x)``;
* ``"laplace_textbook_div"``, ``"laplace_textbook_log1p_div"``, ``"signed_exponential_div"`` --
  the same three releases with the log divided by a rate ``lam`` instead of multiplied by a scale
  (``... / epsilon``; Python's ``random.expovariate(lam)`` is ``-log(1 - random()) / lam``): the
  quotient rounds otherwise than any product, so these are models of their own;
* ``"normal"`` -- ``Generator.normal(c, b)`` / ``c + b * Generator.standard_normal()``: numpy's
  ziggurat returns ``x = +-r w[i]`` for a layer ``i`` (8 bits of the 64-bit word) and a 52-bit
  integer ``r``, then ``c + b * x``; 256 lattices, one per layer, and the rare tail draws beyond
  the base layer (about 3 in 10^4), ``+-(R - log1p(-U) / R)`` from a second uniform ``U``;
* ``"generator_exponential"`` -- ``c + Generator.exponential(b)``: numpy's exponential ziggurat,
  ``x = r w[i]`` with a 53-bit ``r`` (tail: ``R - log1p(-U)``), then ``b * x``, then ``c + ``;
* ``"signed_generator_exponential"`` -- ``c + s * Generator.exponential(b)``, ``s = +-1`` from a
  second draw: the same lattices on both sides of ``c``;
* ``"uniform"`` -- ``lo + (hi - lo) * U`` on the interval of consecutive sorted data points holding
  ``y`` (``Generator.uniform(lo, hi)``; the continuous exponential mechanism's draw inside its
  chosen interval). Outputs outside the data's range are not reachable.

The ziggurat widths ``w[i]`` are constants compiled into numpy; :func:`ziggurat_widths` reads them
off the installed numpy's own sampler (the first draw of a fresh generator takes one 64-bit word on
the fast path, so ``x / r`` pins ``w[i]`` to the ulp) and checks them against every such draw.

numpy's vectorised ``log`` differs from the C library's (which the samplers call) in the last bit on
about 0.5 % of inputs, so a miss of the fast pass is checked again with :func:`math.log`.
"""

from __future__ import annotations

import functools
import math
from typing import Any, Callable

import numpy as np

__all__ = ["MODELS", "RATE_MODELS", "reachable", "WINDOW", "ziggurat_widths"]

#: Integers tried on each side of the inverted guess of ``k``.
WINDOW = 3
_TWO53 = 2.0 ** 53
_mlog = np.frompyfunc(math.log, 1, 1)


def _libm_log(x: np.ndarray) -> np.ndarray:
    out = np.full(x.shape, np.nan)
    ok = x > 0
    if ok.any():
        out[ok] = _mlog(x[ok]).astype(np.float64)
    return out


def _laplace_core(U: np.ndarray, log: Callable[[np.ndarray], np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """(sign, log term) of numpy's ``random_laplace`` for uniforms ``U``."""
    upper = U >= 0.5
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.where(upper, (2.0 - U) - U, U + U)
        return upper, log(a)


def _fwd_laplace(k: np.ndarray, c: float, b: float, log: Callable) -> np.ndarray:
    upper, lg = _laplace_core(k / _TWO53, log)
    with np.errstate(invalid="ignore", over="ignore"):
        return np.where(upper, c - b * lg, c + b * lg)


def _fwd_laplace_scaled(k: np.ndarray, c: float, b: float, log: Callable) -> np.ndarray:
    upper, lg = _laplace_core(k / _TWO53, log)
    with np.errstate(invalid="ignore", over="ignore"):
        return np.where(upper, -lg, lg) * b + c


def _fwd_exponential(k: np.ndarray, c: float, b: float, log: Callable) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return c + b * -log(1.0 - k / _TWO53)


def _guess_laplace(y: np.ndarray, c: float, b: float) -> np.ndarray:
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        t = (y - c) / b
        return np.where(t < 0, 0.5 * np.exp(t), 1.0 - 0.5 * np.exp(-t))


def _guess_exponential(y: np.ndarray, c: float, b: float) -> np.ndarray:
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        return -np.expm1(-(y - c) / b)


_LOCATION: dict[str, tuple[Callable, Callable]] = {
    "laplace": (_fwd_laplace, _guess_laplace),
    "laplace_scaled": (_fwd_laplace_scaled, _guess_laplace),
    "exponential": (_fwd_exponential, _guess_exponential),
}


def _search(y: np.ndarray, guess: np.ndarray, fwd: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """Whether some integer k within :data:`WINDOW` of ``guess * 2^53`` (in [1, 2^53)) maps to y."""
    k0 = np.floor(np.nan_to_num(guess, nan=-1.0) * _TWO53)
    hit = np.zeros(y.shape, dtype=bool)
    valid = np.isfinite(y) & (k0 >= -WINDOW) & (k0 < _TWO53 + WINDOW)
    for dk in range(-WINDOW, WINDOW + 1):
        k = k0 + dk
        ok = valid & (k >= 1) & (k < _TWO53) & ~hit
        if ok.any():
            hit[ok] = fwd(k[ok], ok) == y[ok]
    return hit


def _location_model(name: str, y: np.ndarray, c: float, b: float) -> np.ndarray:
    fwd, guess_of = _LOCATION[name]
    g = guess_of(y, c, b)
    hit = _search(y, g, lambda k, ok: fwd(k, c, b, np.log))
    miss = ~hit & np.isfinite(y)
    if miss.any():  # the C library's log, on what the fast pass missed
        ym = y[miss]
        hit[miss] = _search(ym, g[miss], lambda k, ok: fwd(k, c, b, _libm_log))
    return hit


def _libm_log1p_neg(z: np.ndarray) -> np.ndarray:
    out = np.full(z.shape, np.nan)
    ok = z < 1
    if ok.any():
        out[ok] = _mlog1p(-z[ok]).astype(np.float64)
    return out


def _two_sided_log_model(y: np.ndarray, c: float, b: float, spacing: float, log1p: bool = False,
                         divide: bool = False) -> np.ndarray:
    """``c - b*log(x)`` above ``c`` and ``c + b*log(x)`` below it, ``x = j * spacing`` in (0, 1]:
    the hand-written inverse CDF (``spacing`` 2^-52) and the exponential with a random sign
    (2^-53). With ``log1p``, ``c -+ b*log1p(-z)`` for ``z = j * spacing`` in [0, 1) instead (the
    inverse CDF written with ``log1p(-2|u|)``). With ``divide``, ``b`` is a rate ``lam`` and the
    release is ``c -+ log(x)/lam`` (``.../ epsilon``, Python's ``random.expovariate(lam)``): a
    division rounds otherwise than a product with any double ``1/lam``."""
    above = y > c
    per_k = spacing * _TWO53  # x (or z) = k 2^-53 * per_k on the 2^-53 grid of _search
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        a = np.abs(y - c) * b if divide else np.abs(y - c) / b
        g = (-np.expm1(-a) if log1p else np.exp(-a)) / per_k

    def fwd(k: np.ndarray, up: np.ndarray, log: Callable) -> np.ndarray:
        x = (k / _TWO53) * per_k
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            lg = log(np.where(x < 1.0, x, np.nan)) if log1p else log(np.where(x <= 1.0, x, np.nan))
            t = lg / b if divide else b * lg
            return np.where(up, c - t, c + t)

    fast, slow = ((lambda z: np.log1p(-z)), _libm_log1p_neg) if log1p else (np.log, _libm_log)
    hit = _search(y, g, lambda k, ok: fwd(k, above[ok], fast))
    miss = ~hit & np.isfinite(y)
    if miss.any():  # the C library's log (log1p), on what the fast pass missed
        ym, am = y[miss], above[miss]
        hit[miss] = _search(ym, g[miss], lambda k, ok: fwd(k, am[ok], slow))
    return hit


#: Two-sided log models: name -> (spacing of the uniform x in c -+ b*log(x), log1p(-x) instead,
#: divide by a rate instead of multiplying by a scale).
_TWO_SIDED_LOG = {"laplace_textbook": (2.0 ** -52, False, False), "laplace_textbook_log1p": (2.0 ** -52, True, False),
                  "signed_exponential": (2.0 ** -53, False, False),
                  "laplace_textbook_div": (2.0 ** -52, False, True),
                  "laplace_textbook_log1p_div": (2.0 ** -52, True, True),
                  "signed_exponential_div": (2.0 ** -53, False, True)}
#: Models whose second parameter is a rate ``lam`` (the release divides by it), not a scale.
RATE_MODELS = frozenset(k for k, v in _TWO_SIDED_LOG.items() if v[2])


#: (bits of the layer index shifted out first, bits of the integer r) of numpy's two ziggurats.
_ZIGGURAT = {"normal": (8, 52), "generator_exponential": (3, 53)}
#: Ziggurat models drawn with a random sign, and the ziggurat each draws from.
_SIGNED = {"signed_generator_exponential": "generator_exponential"}
#: Where the ziggurat's base layer ends and its tail begins (numpy's ``ziggurat_nor_r``,
#: ``ziggurat_exp_r``; the normal tail also uses ``ziggurat_nor_inv_r``, written as numpy writes it).
_TAIL_R = {"normal": 3.6541528853610087963519472518, "generator_exponential": 7.69711747013104972}
_NOR_INV_R = 0.27366123732975827203338247596
_mlog1p = np.frompyfunc(math.log1p, 1, 1)


def _tail_x(name: str, k: np.ndarray) -> np.ndarray:
    """The tail draw (before the sign and scale) for uniforms U = k 2^-53, with the C library's log1p."""
    lg = _mlog1p(-(k / _TWO53)).astype(np.float64) if k.size else np.zeros(0)
    if name == "normal":
        return _TAIL_R[name] + -_NOR_INV_R * lg
    return _TAIL_R[name] - lg


def _ziggurat_tail(name: str, y: np.ndarray, t: np.ndarray, c: float, b: float) -> np.ndarray:
    """Whether y is a tail draw ``c + b * (+-(r + xx))`` of the ziggurat (a second uniform U)."""
    R = _TAIL_R[name]
    xx = np.abs(t) - R
    # invert xx = -log1p(-U) / R (normal) or -log1p(-U) (exponential) to a guess of U
    rate = R if name == "normal" else 1.0
    with np.errstate(over="ignore", invalid="ignore"):
        guess = -np.expm1(-np.maximum(xx, 0.0) * rate)
    sign = np.where(t < 0, -1.0, 1.0)
    return _search(y, guess, lambda k, ok: c + b * (sign[ok] * _tail_x(name, k)))


def _first_words(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """n fresh generators' first 64-bit word and first standard normal / exponential draw."""
    words, normals, expos = [], [], []
    for s in np.random.SeedSequence(20261128).spawn(n):
        words.append(np.random.PCG64(s).random_raw())
        normals.append(np.random.Generator(np.random.PCG64(s)).standard_normal())
        expos.append(np.random.Generator(np.random.PCG64(s)).standard_exponential())
    return np.array(words, dtype=np.uint64), np.array(normals), np.array(expos)


def _layer_and_integer(kind: str, words: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    if kind == "normal":  # idx = low 8 bits, then a sign bit, then 52 bits of r
        idx = (words & np.uint64(0xFF)).astype(np.intp)
        rest = words >> np.uint64(8)
        neg = (rest & np.uint64(1)).astype(bool)
        r = (rest >> np.uint64(1)) & np.uint64((1 << 52) - 1)
    else:  # drop 3 bits, idx = next 8 bits, r = the top 53
        rest = words >> np.uint64(3)
        idx = (rest & np.uint64(0xFF)).astype(np.intp)
        r = rest >> np.uint64(8)
        neg = np.zeros(words.shape, dtype=bool)
    return idx, r.astype(np.float64), neg


@functools.lru_cache(maxsize=None)
def ziggurat_widths(kind: str) -> np.ndarray | None:
    """numpy's 256 ziggurat widths for ``kind`` ("normal" or "generator_exponential"), read off the
    installed numpy; ``None`` when its draws are not ``r * w[i]`` (another algorithm: the model then
    reaches nothing, which costs power, never soundness)."""
    words, normals, expos = _first_words(8192)
    idx, r, neg = _layer_and_integer(kind, words)
    x = np.where(neg, -normals, normals) if kind == "normal" else expos
    w = np.full(256, np.nan)
    for i in range(256):
        m = (idx == i) & (r > 0) & (x > 0)
        if m.sum() < 3:
            return None
        best, most = np.nan, 0
        # the fast path gives x = r * w exactly; a rejection redraw gives something else: the width
        # is the double near x / r that reproduces the most draws of its layer
        for w0 in np.unique(x[m] / r[m])[:8]:
            for step in range(-3, 4):
                cand = w0
                for _ in range(abs(step)):
                    cand = math.nextafter(cand, math.inf if step > 0 else -math.inf)
                hits = int(np.count_nonzero(r[m] * cand == x[m]))
                if hits > most:
                    best, most = cand, hits
        # the top layers reject up to half their draws (numpy's exponential layer 1: 16 of 32); a
        # wrong width reproduces none, so a third of the layer's draws and at least 3 pin it
        if most < max(3, m.sum() / 3):
            return None
        w[i] = best
    return w


#: Outputs left below which the ziggurat's layers are tried all at once (one array of outputs x
#: layers) rather than one layer at a time: the same comparisons, without 256 passes of Python.
_FEW = 2048


def _layers_at_once(y: np.ndarray, t: np.ndarray, sign: np.ndarray, w: np.ndarray, rmax: float, c: float,
                    b: float) -> np.ndarray:
    """Whether some layer of ``w`` and integer within :data:`WINDOW` of ``|t| / w`` gives exactly y."""
    at = np.abs(t)[:, None]
    inside = at <= rmax * w[None, :]
    k0 = np.floor(at / w[None, :])
    got = np.zeros(inside.shape, dtype=bool)
    for dk in range(-WINDOW, WINDOW + 1):
        k = k0 + dk
        ok = inside & ~got & (k >= 0) & (k < rmax)
        x = sign[:, None] * (k * w[None, :])
        with np.errstate(over="ignore", invalid="ignore"):
            got |= ok & (c + b * x == y[:, None])
    return got.any(axis=1)


def _ziggurat_model(model: str, y: np.ndarray, c: float, b: float) -> np.ndarray:
    name = _SIGNED.get(model, model)
    two_sided = name == "normal" or model in _SIGNED
    hit = np.zeros(y.shape, dtype=bool)
    w = ziggurat_widths(name)
    if w is None or not (b > 0):
        return hit
    rmax = 2.0 ** _ZIGGURAT[name][1]
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        t = (y - c) / b
    todo = np.isfinite(t) & ((t >= 0) | two_sided)  # the exponential alone has no negative side
    sign = np.where(t < 0, -1.0, 1.0)
    # densest layers first: where a layer's lattice is finer than the output's ulp, it reaches
    # almost every double and the rest need not be tried
    order = np.argsort(w)
    for n_done, i in enumerate(order):
        rest = np.flatnonzero(todo & ~hit)
        if rest.size <= _FEW:  # few outputs left: every remaining layer at once
            hit[rest] = _layers_at_once(y[rest], t[rest], sign[rest], w[order[n_done:]], rmax, c, b)
            break
        sel = rest[np.abs(t[rest]) <= rmax * w[i]]
        if sel.size == 0:
            continue
        k0 = np.floor(np.abs(t[sel]) / w[i])
        got = np.zeros(sel.size, dtype=bool)
        for dk in range(-WINDOW, WINDOW + 1):
            k = k0 + dk
            ok = ~got & (k >= 0) & (k < rmax)
            x = sign[sel] * (k * w[i])
            with np.errstate(over="ignore", invalid="ignore"):
                got |= ok & (c + b * x == y[sel])
        hit[sel] = got
    tail = np.flatnonzero(todo & ~hit & (np.abs(t) >= 0.99 * _TAIL_R[name]))
    if tail.size:
        hit[tail] = _ziggurat_tail(name, y[tail], t[tail], c, b)
    return hit


def _uniform_model(y: np.ndarray, points: tuple) -> np.ndarray:
    x = np.unique(np.asarray(points, dtype=np.float64))
    hit = np.zeros(y.shape, dtype=bool)
    if x.size < 2:
        return hit
    i = np.searchsorted(x, y, side="right") - 1
    inside = np.isfinite(y) & (i >= 0) & (i < x.size - 1)
    # an output equal to a data point is reached from the interval it starts (U = 0) and, when it
    # ends the one below (U -> 1 rounds up), from that one too: both are tried
    for shift in (0, -1):
        j = np.clip(i + shift, 0, x.size - 2)
        ok = inside & ~hit & (i + shift >= 0)
        if not ok.any():
            continue
        lo, hi = x[j[ok]], x[j[ok] + 1]
        w = hi - lo
        with np.errstate(divide="ignore", invalid="ignore"):
            g = (y[ok] - lo) / w
        hit[ok] = _search(y[ok], g, lambda k, sel, lo=lo, w=w: lo[sel] + w[sel] * (k / _TWO53))
    return hit


def reachable(model: tuple, y: Any) -> np.ndarray:
    """Boolean mask: which outputs ``y`` the sampler ``model`` can release exactly.

    ``model`` is ``(name, c, b)`` for the location-scale models of :data:`MODELS` and
    ``("uniform", x0, x1, ...)`` (the sorted data points) for the interval model."""
    y = np.asarray(y, dtype=np.float64).reshape(-1)
    name = model[0]
    if name == "uniform":
        return _uniform_model(y, tuple(model[1:]))
    if name in _ZIGGURAT or name in _SIGNED:
        return _ziggurat_model(name, y, float(model[1]), float(model[2]))
    if name in _TWO_SIDED_LOG:
        return _two_sided_log_model(y, float(model[1]), float(model[2]), *_TWO_SIDED_LOG[name])
    if name not in _LOCATION:
        raise ValueError(f"sampler model must be one of {', '.join(MODELS)}, got {name!r}")
    return _location_model(name, y, float(model[1]), float(model[2]))


#: The sampler models (name -> one line saying what it releases).
MODELS: dict[str, str] = {
    "laplace": "c + b log(2U) / c - b log(2 - 2U) (numpy Generator/RandomState.laplace(c, b))",
    "laplace_scaled": "standard Laplace * b + c (scipy.stats.laplace.rvs(loc=c, scale=b))",
    "laplace_textbook": "c - b sign(u) log(1 - 2|u|), u = U - 1/2 (the hand-written inverse CDF)",
    "exponential": "c + b (-log(1 - U)) (RandomState.exponential, inverse CDF)",
    "laplace_textbook_log1p": "c - b sign(u) log1p(-2|u|), u = U - 1/2 (the hand-written inverse CDF with log1p)",
    "signed_exponential": "c + s b (-log(U)), s = +-1 from a second draw (a Laplace as a signed exponential)",
    "laplace_textbook_div": "c - sign(u) log(1 - 2|u|) / lam, u = U - 1/2 (the inverse CDF divided by epsilon)",
    "laplace_textbook_log1p_div": "c - sign(u) log1p(-2|u|) / lam (the log1p inverse CDF divided by epsilon)",
    "signed_exponential_div": "c + s (-log(U)) / lam (random.expovariate(lam) with a random sign)",
    "normal": "c + b (+-r w[i]) (numpy Generator.normal(c, b), ziggurat: 256 layers, 52-bit r)",
    "generator_exponential": "c + b (r w[i]) (numpy Generator.exponential(b), ziggurat: 256 layers, 53-bit r)",
    "signed_generator_exponential": "c + s b (r w[i]), s = +-1 from a second draw (s * Generator.exponential(b))",
    "uniform": "lo + (hi - lo) U inside the interval of consecutive data points (Generator.uniform)",
}
