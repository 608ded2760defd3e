"""Learned projections: a score that separates draws under D from draws under D', fitted on the
selection split only (docs/auditing.md, "Learned projections").

A vector output (a noisy histogram, a sparse-vector answer row, RAPPOR bits) has no natural
order, so thresholds need a direction. The best event for a pair is a level set of the
likelihood ratio p(y | D) / p(y | D'); we approximate its logarithm by a logistic regression on
a fixed feature map of the row, then threshold the fitted score. This is DP-Sniper's idea
(Bichsel et al., S&P 2021), with two differences that matter: the regression and the threshold are
chosen on the *selection* draws and the event is certified on fresh draws with exact
Clopper–Pearson bounds (the certified level is untouched however the model was fitted), and there
is no probability floor: thresholds reach into both tails of the score.

Features of a row (all computed the same way for selection and certification draws, with the
centring and scaling frozen from the selection draws):

* real rows: every coordinate (NaN read as 0), an indicator per coordinate that was ever NaN
  (the "no answer" pattern of sparse vector), and the row's minimum, maximum and number of
  answered coordinates (order statistics: what a maximum or a prefix sum responds to), and an
  indicator per value of every coordinate that takes at most :data:`ONEHOT_MAX` distinct values
  (a label carried in a real row, e.g. SVT4's 1/0/-1 inside SVT34Parallel);
* label rows: an indicator for every (coordinate, value) with at most :data:`ONEHOT_MAX` values
  seen in that coordinate — so the regression can express any log-likelihood ratio that is a sum
  over coordinates, e.g. exactly RAPPOR's — and the raw value of numeric coordinates with more.

The fit is an L2-penalised logistic regression solved with ``scipy.optimize.minimize``
(L-BFGS), not ``statsmodels.Logit``: perfectly separated draws (support violations, which are the
most important case) make the unpenalised maximum-likelihood estimate diverge, while the penalty
keeps it finite and its direction still separates the draws.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import optimize, special

__all__ = ["Projection", "fit_projection", "ONEHOT_MAX", "FIT_ROWS"]

#: A label coordinate with at most this many distinct values is one-hot encoded.
ONEHOT_MAX = 8
#: At most this many selection rows per dataset are used for the fit (the threshold uses all).
FIT_ROWS = 100_000
#: L2 penalty on the standardised weights (the intercept is not penalised).
PENALTY = 1.0


@dataclass(frozen=True, eq=False)
class Projection:
    """A frozen score ``s(y) = standardise(features(y)) . weights``: fitted once, applied to any draws.

    ``kind`` is "real" or "finite" (the feature map); ``nan_coords`` the coordinates with a NaN
    indicator; ``onehot`` the one-hot (coordinate, value) pairs; ``numeric`` the coordinates used
    as numbers; ``mean``/``scale`` the frozen standardisation; ``weights`` the fitted direction.
    """

    kind: str
    width: int
    nan_coords: tuple[int, ...]
    onehot: tuple[tuple[int, float], ...]
    numeric: tuple[int, ...]
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    weights: tuple[float, ...]

    def features(self, y: np.ndarray) -> np.ndarray:
        y = np.asarray(y)
        y = y.reshape(y.shape[0], -1)
        if y.shape[1] != self.width:
            raise ValueError(f"rows of width {y.shape[1]} given to a projection fitted on width {self.width}")
        return _features(y, self.kind, self.nan_coords, self.onehot, self.numeric)

    def score(self, y: np.ndarray) -> np.ndarray:
        """The projected score of each row of ``y`` (shape ``(n, width)``)."""
        x = self.features(y)
        if x.shape[1] == 0:
            return np.zeros(x.shape[0])
        z = (x - np.asarray(self.mean)) / np.asarray(self.scale)
        return z @ np.asarray(self.weights)

    def __str__(self) -> str:
        w = np.asarray(self.weights)
        top = np.argsort(-np.abs(w))[:3]
        names = _feature_names(self)
        parts = ", ".join(f"{names[i]}: {w[i]:+.3g}" for i in top if i < len(names))
        return f"learned score ({self.kind} features; largest weights {parts})"


def _feature_names(p: Projection) -> list[str]:
    if p.kind == "real":
        return ([f"y[{j}]" for j in range(p.width)] + [f"y[{j}] is NaN or infinite" for j in p.nan_coords]
                + ["min", "max", "answered"] + [f"y[{j}]=={v:g}" for j, v in p.onehot])
    return [f"y[{j}]=={v:g}" for j, v in p.onehot] + [f"y[{j}]" for j in p.numeric]


def _features(y: np.ndarray, kind: str, nan_coords: tuple[int, ...], onehot: tuple[tuple[int, float], ...],
              numeric: tuple[int, ...]) -> np.ndarray:
    if kind == "real":
        yf = y.astype(np.float64)
        # an infinite coordinate is an atom like NaN (its indicator column), not a value: left in,
        # it would make every learned score NaN (inf * 0)
        nan = ~np.isfinite(yf)
        filled = np.where(nan, 0.0, yf)
        answered = (~nan).sum(axis=1)
        with np.errstate(invalid="ignore"):
            lo = np.where(answered > 0, np.nanmin(np.where(nan, np.inf, yf), axis=1), 0.0)
            hi = np.where(answered > 0, np.nanmax(np.where(nan, -np.inf, yf), axis=1), 0.0)
        cols = [filled, nan[:, list(nan_coords)].astype(np.float64), lo[:, None], hi[:, None],
                answered[:, None].astype(np.float64)]
        cols += [(yf[:, j] == v).astype(np.float64)[:, None] for j, v in onehot]
        return np.concatenate(cols, axis=1)
    yf = y.astype(np.float64)
    cols = [(yf[:, j] == v).astype(np.float64)[:, None] for j, v in onehot]
    # a missing coordinate of a finite row (NaN: a key absent from a dict release) counts as 0 here;
    # its value is seen by the one-hot columns of the coordinates that take few values
    cols += [np.where(np.isfinite(yf[:, j]), yf[:, j], 0.0)[:, None] for j in numeric]
    return np.concatenate(cols, axis=1) if cols else np.zeros((y.shape[0], 0))


def _few_values(col: np.ndarray) -> np.ndarray | None:
    """The distinct values of ``col`` when there are at most :data:`ONEHOT_MAX`, else None. A
    continuous coordinate shows it in its first rows, so the full sort is only paid for the
    coordinates that may be labels."""
    if np.unique(col[:1024]).size > ONEHOT_MAX:
        return None
    vals = np.unique(col)
    return vals if vals.size <= ONEHOT_MAX else None


def _layout(y: np.ndarray, kind: str) -> tuple[tuple[int, ...], tuple[tuple[int, float], ...], tuple[int, ...]]:
    """Which coordinates get NaN indicators / one-hot columns / numeric columns (selection draws only)."""
    onehot: list[tuple[int, float]] = []
    if kind == "real":
        yr = y.astype(np.float64)
        nan_coords = tuple(int(j) for j in np.flatnonzero((~np.isfinite(yr)).any(axis=0)))
        # A real coordinate that takes only a few values is a label in disguise (SVT4's 1/0/-1
        # inside SVT34Parallel's real rows): a linear weight on its value cannot tell the middle
        # value from the ends, so each value also gets an indicator, as for label rows.
        for j in range(y.shape[1]):
            col = yr[:, j]
            vals = _few_values(col[np.isfinite(col)])
            if vals is not None and vals.size >= 2:
                onehot.extend((j, float(v)) for v in vals)
        return nan_coords, tuple(onehot), ()
    numeric: list[int] = []
    yf = y.astype(np.float64)
    for j in range(y.shape[1]):
        vals = _few_values(yf[:, j])
        if vals is None:
            numeric.append(j)
        elif vals.size > 1:
            onehot.extend((j, float(v)) for v in vals)
    return (), tuple(onehot), tuple(numeric)


def _logistic(x: np.ndarray, t: np.ndarray, penalty: float) -> np.ndarray:
    """Weights (last entry the intercept) of an L2-penalised logistic regression of t on x."""
    n, p = x.shape
    xa = np.concatenate([x, np.ones((n, 1))], axis=1)
    sign = 2.0 * t - 1.0

    def loss(w: np.ndarray) -> tuple[float, np.ndarray]:
        z = xa @ w
        # log(1 + exp(-s z)) in log space; its derivative is -s * sigmoid(-s z)
        val = float(np.logaddexp(0.0, -sign * z).sum()) + 0.5 * penalty * float(w[:p] @ w[:p])
        g = xa.T @ (-sign * special.expit(-sign * z))
        g[:p] += penalty * w[:p]
        return val, g

    res = optimize.minimize(loss, np.zeros(p + 1), jac=True, method="L-BFGS-B", options={"maxiter": 200})
    return np.asarray(res.x)


def fit_projection(y1: np.ndarray, y2: np.ndarray, kind: str) -> Projection | None:
    """Fit the projection separating ``y1`` (rows drawn under D) from ``y2`` (under D').

    Deterministic: the same draws give the same projection (the subsample for large inputs is
    the first :data:`FIT_ROWS` rows, which are themselves i.i.d.). ``None`` when the rows carry no
    feature that varies (nothing to learn).
    """
    y1 = np.asarray(y1).reshape(len(y1), -1)
    y2 = np.asarray(y2).reshape(len(y2), -1)
    width = y1.shape[1]
    both = np.concatenate([y1, y2])
    nan_coords, onehot, numeric = _layout(both, kind)
    a, b = y1[:FIT_ROWS], y2[:FIT_ROWS]
    x = _features(np.concatenate([a, b]), kind, nan_coords, onehot, numeric)
    if x.shape[1] == 0:
        return None
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    keep = scale > 0
    if not keep.any():
        return None
    scale = np.where(keep, scale, 1.0)
    z = (x - mean) / scale
    t = np.concatenate([np.ones(len(a)), np.zeros(len(b))])
    w = _logistic(z, t, PENALTY)[:-1]
    w = np.where(keep, w, 0.0)
    if not np.any(w != 0):
        return None
    return Projection(kind=kind, width=width, nan_coords=nan_coords, onehot=onehot, numeric=numeric,
                      mean=tuple(float(v) for v in mean), scale=tuple(float(v) for v in scale),
                      weights=tuple(float(v) for v in w))
