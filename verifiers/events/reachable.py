"""Float events relative to the data: "the release is (not) a double that a common sampler can
output around a value computed from the pair's data".

A float release ``fl(s + Y)`` of a statistic ``s`` with noise ``Y`` drawn by an inverse-CDF sampler
can only take the doubles the sampler reaches from ``s`` (:mod:`verifiers.events.samplers`). Under
the neighbour, whose statistic is ``s'``, most releases are still reachable from ``s`` (the
sampler's outputs are dense) but not all: a share of the doubles near the output are reachable
from one dataset's statistic only. That is a leak finer than a binade -- decimal data, sums of
records, a median drawn uniformly between two data points -- which the bit-pattern labels of the
output alone (:mod:`verifiers.events.floats`) do not see. The events here test it directly:

* for each dataset of the pair, centres it can have produced: ``numpy.sum``, :func:`math.fsum`,
  the left-to-right sum, ``numpy.mean``, ``numpy.median`` and the count of a 1-D numeric dataset
  (a scalar dataset is its own centre); only centres within six standard errors of the selection
  draws' median are kept;
* scales the claim implies (``sensitivity / epsilon`` written the ways libraries write it), kept
  when within 15 % of the draws' mean absolute deviation;
* for each (sampler model, centre, scale) and for the interval model of each dataset's sorted
  points: the event "reachable" and its complement "not reachable".

The complement is the strong one: under the dataset whose statistic is the centre it has
probability (about) zero, under the neighbour a fixed share -- a support violation. A float-safe
release (snapped to a grid, discrete noise, rounded to decimals) is reachable under neither, or
under both alike. The events are functions of the output with parameters fixed from the data and
the selection draws, chosen on the selection split like every other event: the certification's
level does not depend on them.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dpharness.verifiers.events.core import Candidates, LabelEvent, fmt, labelled
from dpharness.verifiers.events.samplers import RATE_MODELS, reachable

__all__ = ["Reachable", "reachable_candidates", "centres", "scales", "sensitivities", "data_context", "declared_ends"]

#: Models whose parameters are a centre and a scale, with where their median sits above the
#: centre and their mean absolute deviation about the median, in units of the scale (Laplace: 0 and
#: 1; normal: 0 and sqrt(2/pi); exponential: ln 2 and ln 2).
_LOCATION_MODELS = {"laplace": (0.0, 1.0), "laplace_scaled": (0.0, 1.0), "laplace_textbook": (0.0, 1.0),
                    "laplace_textbook_log1p": (0.0, 1.0),
                    "exponential": (math.log(2.0), math.log(2.0)),
                    "normal": (0.0, math.sqrt(2.0 / math.pi)),
                    "generator_exponential": (math.log(2.0), math.log(2.0)),
                    "signed_exponential": (0.0, 1.0), "signed_generator_exponential": (0.0, 1.0),
                    "laplace_textbook_div": (0.0, 1.0), "laplace_textbook_log1p_div": (0.0, 1.0),
                    "signed_exponential_div": (0.0, 1.0)}
#: Scales within this many ulps of a spelled-out ``sensitivity / epsilon`` are tried (other orders
#: of the same operations, e.g. ``1 / (epsilon * n)`` against ``(1 / n) / epsilon``, land within a
#: few ulps of each other).
ULPS = 4
#: Selection draws per dataset that pick, among those scales, the one the sampler used (at most
#: this many, and at least MIN_PROBE, else the spelled-out scales are kept).
PROBE = 128
MIN_PROBE = 16
#: Only the first this many selection draws per dataset are searched for them.
SCAN = 20_000
#: Data larger than this is not searched for centres or intervals (the events would carry it whole).
MAX_POINTS = 10_000


class Reachable(LabelEvent):
    """``values = (model, negate, *params)``: the output is (``negate`` 0) or is not (1) a double
    the sampler ``model`` can release with those parameters (:func:`verifiers.events.samplers.reachable`)."""

    kinds = ("reachable",)

    def contains(self, y: Any) -> np.ndarray:
        y = np.asarray(y)
        v = y.reshape(y.shape[0], -1)[:, self.coord] if self.coord >= 0 else y.reshape(-1)
        model, negate, params = self.values[0], int(self.values[1]), tuple(self.values[2:])
        hit = reachable((model, *params), v)
        return ~hit if negate else hit

    def describe(self) -> str:
        model, negate, params = self.values[0], int(self.values[1]), self.values[2:]
        v = "y" if self.coord < 0 else f"y[{self.coord}]"
        what = "not " if negate else ""
        if model == "uniform":
            pts = ", ".join(fmt(p) for p in params[:3]) + (f", ... ({len(params)} points)" if len(params) > 3 else "")
            return f"{{{v} is {what}lo + (hi - lo) U between consecutive data points [{pts}], U in 2^-53 Z}}"
        c, b = params
        par = "rate" if model in RATE_MODELS else "scale"
        return f"{{{v} is {what}an output of the {model} sampler around c = {float(c)!r}, {par} {float(b)!r}}}"


def _numeric_1d(d: Any) -> np.ndarray | None:
    try:
        a = np.asarray(d)
    except (TypeError, ValueError):  # ragged or exotic data: no statistic to compute
        return None
    if a.dtype.kind not in "biuf" or a.ndim > 1 or a.size > MAX_POINTS:
        return None
    return a.astype(np.float64).reshape(-1)


def centres(d: Any) -> list[float]:
    """Values a release of dataset ``d`` may be centred on (distinct, finite)."""
    a = _numeric_1d(d)
    if a is None:
        return []
    if a.size == 1:
        out = [float(a[0])]
    elif a.size == 0:
        out = [0.0]
    else:
        total, exact, loop = float(np.sum(a)), math.fsum(a.tolist()), float(sum(a.tolist()))
        # a mean is np.mean (numpy's pairwise sum / n) or one of the other sums / n
        out = [total, exact, loop, float(np.mean(a)), exact / a.size, loop / a.size, float(np.median(a)),
               float(a.size)]
    return [c for c in dict.fromkeys(out) if math.isfinite(c)]


def sensitivities(claim: Any, sizes: tuple[int, ...] = (), ends: tuple[float, ...] = ()) -> list[float]:
    """Sensitivities a release may use: the claim's, 1, and with a declared input range [lo, hi]
    its width ``hi - lo`` (a sum of clipped records) and, per dataset size n, ``(hi - lo) / n``
    and ``1 / n`` (a mean), plus the claim's ``/ n`` (distinct, finite, > 0)."""
    sens = getattr(claim, "sensitivity", None)
    base = ([float(sens)] if sens is not None else []) + [1.0]
    if len(ends) == 2:
        base.append(float(ends[1]) - float(ends[0]))
    out = list(base)
    for n in sizes:
        if n and n > 1:
            out += [s / n for s in base]
    return [s for s in dict.fromkeys(out) if math.isfinite(s) and s > 0]


def scales(claim: Any, sizes: tuple[int, ...] = (), ends: tuple[float, ...] = ()) -> list[float]:
    """Scales ``sensitivity / epsilon`` as libraries compute them (``s / eps``, ``s * (1 / eps)``,
    ``1 / (eps / s)``) for each of :func:`sensitivities` and, when the claim has a ``delta`` in
    (0, 1), the classic Gaussian mechanism's ``s sqrt(2 ln(1.25 / delta)) / eps`` in the orders
    libraries write it (distinct, finite, > 0)."""
    eps = float(getattr(claim, "epsilon", 0.0) or 0.0)
    if not (eps > 0 and math.isfinite(eps)):
        return []
    sens = sensitivities(claim, sizes, ends)
    out = []
    for s in sens:
        out += [s / eps, s * (1.0 / eps), 1.0 / (eps / s)]
    delta = float(getattr(claim, "delta", 0.0) or 0.0)
    if 0.0 < delta < 1.0:
        root = math.sqrt(2.0 * math.log(1.25 / delta))
        for s in sens:
            # Dwork & Roth, Theorem A.1 (eps < 1); diffprivlib writes the second, textbooks the first
            out += [s * root / eps, root * s / eps, root / eps * s, s * (root / eps)]
    return [b for b in dict.fromkeys(out) if math.isfinite(b) and b > 0]


def _interval(dom: Any) -> tuple[float, ...]:
    """(lo, hi) of an interval input domain, ``()`` for any other (or None)."""
    return (float(dom.lo), float(dom.hi)) if hasattr(dom, "lo") and hasattr(dom, "hi") else ()


def declared_ends(mechanism: Any, claim: Any = None) -> tuple[float, ...]:
    """The input range the mechanism declares: an interval input domain (its claim's or its own),
    else scalar ``lower`` / ``upper`` attributes (diffprivlib's ``bounds``); ``()`` when none."""
    claim = mechanism.claim if claim is None else claim
    for dom in (getattr(claim, "input_domain", None), getattr(mechanism, "input_domain", None)):
        if _interval(dom):
            return _interval(dom)
    lo, hi = getattr(mechanism, "lower", None), getattr(mechanism, "upper", None)
    if all(isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool) and math.isfinite(v)
           for v in (lo, hi)) and lo < hi:
        return (float(lo), float(hi))
    return ()


def data_context(mechanism: Any, d1: Any, d2: Any, claim: Any = None) -> tuple:
    """``(d1, d2, claim, ends)``: what the events relative to the data need of a pair."""
    claim = mechanism.claim if claim is None else claim
    return (d1, d2, claim, declared_ends(mechanism, claim))


def _scale_runs(bases: list[float]) -> list[list[float]]:
    """The doubles within :data:`ULPS` ulps of each base scale, merged into runs of consecutive
    doubles (one run per real value the bases approximate)."""
    if not bases:
        return []
    window = set()
    for b in bases:
        up = down = b
        window.add(b)
        for _ in range(ULPS):
            up, down = math.nextafter(up, math.inf), math.nextafter(down, 0.0)
            window.update((up, down))
    runs: list[list[float]] = []
    for b in sorted(window):
        if runs and math.nextafter(runs[-1][-1], math.inf) == b:
            runs[-1].append(b)
        else:
            runs.append([b])
    return runs


def _informative(y: np.ndarray, c: float) -> np.ndarray:
    """Up to :data:`PROBE` of the draws ``y`` whose noise ``y - c`` is larger than the output
    itself: there the noise's doubles are coarser than the output's, and only there does the
    scale's last bit decide which outputs are reachable (elsewhere every one is)."""
    y = y[:SCAN]
    return y[np.abs(y) < np.abs(y - c)][:PROBE]


def _best_scales(name: str, c: float, run: list[float], bases: list[float],
                 probe: list[np.ndarray]) -> list[float]:
    """The scale of ``run`` that the release's own code computed: the one that reaches every
    informative selection draw (:func:`_informative`) of the dataset whose statistic ``c`` is,
    which a scale one ulp off does not (it rounds ``b * x`` otherwise on about half of them). The
    spelled-out bases of the run are tried first and kept when one reaches them all, or when no
    scale does (a release the model does not describe, or too few informative draws to tell)."""
    spelled = [b for b in run if b in bases]
    probe = [p for p in probe if p.size >= MIN_PROBE]
    if len(run) == 1 or not probe:
        return spelled or run[:1]

    def reaches_all(b: float) -> bool:
        return any(bool(reachable((name, c, b), p).all()) for p in probe)

    hit = [b for b in spelled if reaches_all(b)]
    if hit:
        return hit
    middle = run[len(run) // 2]
    for b in sorted((b for b in run if b not in spelled), key=lambda b: abs(b - middle)):
        if reaches_all(b):
            return [b]
    return spelled


def _models(y1: np.ndarray, y2: np.ndarray, context: Any) -> list[tuple]:
    d1, d2, claim = context[:3]
    # a (d1, d2, claim) context (no mechanism at hand): the claim's input domain only
    ends = list(context[3] if len(context) > 3 else _interval(getattr(claim, "input_domain", None)))
    models: list[tuple] = []
    fin = [y[np.isfinite(y)] for y in (y1, y2)]
    if min(f.size for f in fin) < 10:
        return models
    med = [float(np.median(f)) for f in fin]
    mad = float(np.mean(np.concatenate([np.abs(f - m) for f, m in zip(fin, med)])))
    n = min(f.size for f in fin)
    cen = [centres(d) for d in (d1, d2)]
    cs = list(dict.fromkeys(c for cc in cen for c in cc))
    sizes = tuple(a.size for a in (_numeric_1d(d1), _numeric_1d(d2)) if a is not None)
    all_scales = scales(claim, tuple(dict.fromkeys(sizes)), tuple(ends))
    probes: dict[float, list[np.ndarray]] = {}
    for name, (shift, spread) in _LOCATION_MODELS.items():
        kept = [b for b in all_scales if mad > 0 and abs(spread * b - mad) <= 0.15 * mad]
        for c in cs:
            # the median of n draws of a location-scale law is within a few scales / sqrt(n)
            # of where the law puts it
            near = [b for b in kept if any(abs(c + shift * b - m) <= 6.0 * mad / math.sqrt(n) + 1e-12 * abs(c)
                                           for m in med)]
            # a rate model's parameter is 1 / scale (the release divides by epsilon / sensitivity)
            params = [1.0 / b for b in near] if name in RATE_MODELS else near
            if params and c not in probes:
                # the draws of the dataset(s) whose statistic c is: only there does the right
                # scale reach every informative draw
                probes[c] = [_informative(f, c) for f, cc in zip(fin, cen) if c in cc]
            probe = probes.get(c, [])
            for run in _scale_runs(params):
                models += [(name, c, b) for b in _best_scales(name, c, run, params, probe)]
    both = np.concatenate(fin)
    for d in (d1, d2):
        a = _numeric_1d(d)
        if a is not None and a.size + len(ends) >= 2:
            # the data points, and the input domain's ends (the outer intervals of a median)
            x = np.unique(np.concatenate([a, ends]) if ends else a)
            if x.size >= 2 and np.mean((both >= x[0]) & (both <= x[-1])) >= 0.5:
                models.append(("uniform", *x.tolist()))
    return list(dict.fromkeys(models))


def reachable_candidates(y1: Any, y2: Any, context: Any) -> list[Candidates]:
    """The "reachable" / "not reachable" events of every sampler model the pair's data and claim
    suggest (``context = (d1, d2, claim[, ends])``: :func:`data_context`), counted on the
    selection draws."""
    if context is None:
        return []
    a = np.asarray(y1, dtype=np.float64).reshape(-1)
    b = np.asarray(y2, dtype=np.float64).reshape(-1)
    models = _models(a, b, context)
    if not models:
        return []
    c1, c2, sets = [], [], []
    for m in models:
        h1, h2 = reachable(m, a), reachable(m, b)
        for negate in (0, 1):
            k1 = int(np.count_nonzero(h1)) if not negate else int(a.size - np.count_nonzero(h1))
            k2 = int(np.count_nonzero(h2)) if not negate else int(b.size - np.count_nonzero(h2))
            c1.append(k1)
            c2.append(k2)
            sets.append((m[0], negate, *m[1:]))
    return [labelled(c1, c2, "reachable", tuple(sets))]

