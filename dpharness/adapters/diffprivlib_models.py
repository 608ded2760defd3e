"""diffprivlib models (``diffprivlib.models``) as auditable mechanisms: :func:`diffprivlib_model`
(docs/adapters.md, "diffprivlib").

The release is the fitted model, read as a vector of fitted parameters (:data:`MODEL_OUTPUTS`)
or, for trees and forests whose fitted structure is not a fixed-length vector, as the class
probabilities it predicts on a fixed public grid of points. The adapted object declares what
the record generators need to build rows the model accepts: per-column ``lower``/``upper``
(features, then the label of a supervised model), ``width`` and the label's ``classes``.
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Any

import numpy as np

from dpharness.adapters.common import as_array, quiet, require, seeds

if TYPE_CHECKING:  # the verifier is imported when an adapter is built
    from dpharness.verifiers.wrap import WrappedMechanism

__all__ = ["MODEL_OUTPUTS", "PREDICT_GRID", "diffprivlib_model", "model_space"]

#: Output name meaning "the class probabilities predicted on the public grid" (:func:`grid_points`).
PREDICT_GRID = "predict_proba@grid"

#: The fitted attributes released by each model (their concatenation, flattened, is the output).
#: Trees and forests release :data:`PREDICT_GRID`: a function of the fitted model alone (the grid
#: is public and fixed), i.e. post-processing of the release the claim is about, so whatever it
#: tells apart the model tells apart too; it is a faithful, if partial, view of the model.
MODEL_OUTPUTS: dict[str, tuple[str, ...]] = {
    "GaussianNB": ("theta_", "var_", "class_count_"),
    "LinearRegression": ("coef_", "intercept_"),
    "LogisticRegression": ("coef_", "intercept_"),
    "KMeans": ("cluster_centers_",),
    "PCA": ("components_", "explained_variance_", "mean_"),
    "StandardScaler": ("mean_", "var_"),
    "DecisionTreeClassifier": (PREDICT_GRID,),
    "RandomForestClassifier": (PREDICT_GRID,),
}
_UNSUPERVISED = ("KMeans", "PCA", "StandardScaler")
#: Models whose claim covers rows with missing values: scikit-learn's StandardScaler disregards
#: NaNs in fit, and diffprivlib's computes its statistics with tools.nanmean / tools.nanvar.
_MISSING_OK = ("StandardScaler",)
_OLD_NAMES = {"var_": "sigma_"}  # scikit-learn < 1.0 called GaussianNB's variances sigma_
#: GaussianNB reads its classes from the labels present (np.unique(y)), so its per-class arrays
#: change shape with the data: they are released aligned on the declared classes, with a
#: presence flag per class (what the fitted model shows: which classes it knows).
_PER_CLASS = {"GaussianNB": ("theta_", "var_", "class_count_")}
#: Feature count used when the model's bounds do not say it (scalar bounds or none).
DEFAULT_FEATURES = 2


def grid_points(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """The public grid predictions are read on: the corners of the feature box (at most 16:
    the first four features vary, the others sit at their centre) and its centre, a quarter
    and three quarters of the way along the diagonal."""
    mid = 0.5 * (lo + hi)
    k = min(lo.shape[0], 4)
    pts = []
    for corner in itertools.product((0, 1), repeat=k):
        p = mid.copy()
        for j, c in enumerate(corner):
            p[j] = hi[j] if c else lo[j]
        pts.append(p)
    pts += [mid, lo + 0.25 * (hi - lo), lo + 0.75 * (hi - lo)]
    return np.array(pts)


def _pair(b: Any, d: int) -> tuple[np.ndarray, np.ndarray] | None:
    """Per-feature (lower, upper) arrays of length ``d`` from diffprivlib bounds (a pair of
    scalars or of arrays), or None."""
    if b is None:
        return None
    lo, hi = b
    return (np.broadcast_to(np.asarray(lo, dtype=np.float64), (d,)).copy(),
            np.broadcast_to(np.asarray(hi, dtype=np.float64), (d,)).copy())


def model_space(model: Any, supervised: bool, n_features: int | None = None,
                classes: Any = None) -> dict:
    """What the record generators need to build rows ``model`` accepts: ``lower``/``upper`` per
    column (features then the label), ``width`` and, for a classifier, the label's ``classes``.
    Features: the model's ``bounds`` (``bounds_X``), else a box inside ``data_norm`` (rows
    beyond it are clipped by the model), else [0, 1]; the label: ``bounds_y`` (regression), else
    the classes (declared, the model's ``classes``, else 0 and 1)."""
    params = model.get_params()
    b = params.get("bounds", params.get("bounds_X"))
    d = n_features
    if d is None and b is not None and np.ndim(b[0]) == 1:
        d = len(b[0])
    d = int(d or DEFAULT_FEATURES)
    fb = _pair(b, d)
    if fb is None:
        norm = params.get("data_norm")
        r = float(norm) / np.sqrt(d) if norm else 1.0  # every row of the box has norm <= data_norm
        fb = (np.full(d, -r if norm else 0.0), np.full(d, r))
    lo, hi = list(fb[0]), list(fb[1])
    out: dict = {"width": d + (1 if supervised else 0)}
    if supervised:
        by = params.get("bounds_y")
        if by is not None:
            lo.append(float(by[0]))
            hi.append(float(by[1]))
        else:
            cls = classes if classes is not None else params.get("classes")
            cls = tuple(sorted(float(c) for c in np.ravel(cls))) if cls is not None else (0.0, 1.0)
            out["classes"] = cls
            lo.append(cls[0])
            hi.append(cls[-1])
    out.update(lower=lo, upper=hi)
    return out


class _DplModelRelease:
    """``size`` fits of a diffprivlib model on ``data`` (records as rows; the last column is the
    label of a supervised model): each a clone of the model with a seed drawn from ``rng`` and a
    fresh ``BudgetAccountant``; the release is the fitted ``outputs``, flattened into one row."""

    def __init__(self, model: Any, outputs: tuple[str, ...], supervised: bool, grid: np.ndarray | None = None,
                 classes: tuple | None = None) -> None:
        self.model, self.outputs, self.supervised, self.grid, self.classes = model, outputs, supervised, grid, classes

    def _attribute(self, m: Any, a: str) -> np.ndarray:
        if a == PREDICT_GRID:
            return np.asarray(m.predict_proba(self.grid), dtype=np.float64)
        v = getattr(m, a, None)
        if v is None and a in _OLD_NAMES:
            v = getattr(m, _OLD_NAMES[a], None)
        if v is None:
            raise ValueError(f"{type(m).__name__} has no fitted attribute {a!r}")
        return np.asarray(v, dtype=np.float64)

    def _fit_once(self, X: np.ndarray, y: np.ndarray | None, seed: int) -> np.ndarray:
        from sklearn.base import clone

        accountant = require("diffprivlib.accountant", "diffprivlib").BudgetAccountant
        m = clone(self.model)
        params = m.get_params()
        m.set_params(**{k: v for k, v in (("random_state", seed), ("accountant", accountant())) if k in params})
        quiet(lambda: m.fit(X, y) if y is not None else m.fit(X))
        per_class = _PER_CLASS.get(type(m).__name__, ())
        parts = []
        if per_class and self.classes is not None:
            known = [float(c) for c in np.ravel(m.classes_)]
            for c in self.classes:
                i = known.index(c) if c in known else None
                parts.append(np.array([0.0 if i is None else 1.0]))
                for a in per_class:
                    v = self._attribute(m, a)
                    parts.append(np.zeros(v[0].size) if i is None else np.ravel(v[i]))
        for a in self.outputs:
            if a in per_class and self.classes is not None:
                continue
            parts.append(np.ravel(self._attribute(m, a)))
        return np.concatenate(parts)

    def __call__(self, data: Any, size: int, rng: np.random.Generator) -> np.ndarray:
        a = np.asarray(as_array(data), dtype=np.float64)
        if a.ndim != 2 or a.shape[0] == 0 or (self.supervised and a.shape[1] < 2):
            need = "features then the label" if self.supervised else "features"
            raise ValueError(f"{type(self.model).__name__} takes records as rows of a 2-D array or DataFrame "
                             f"({need}), got shape {a.shape}")
        X, y = (a[:, :-1], a[:, -1]) if self.supervised else (a, None)
        return np.stack([self._fit_once(X, y, s) for s in seeds(rng, size)])


def diffprivlib_model(model: Any, *, outputs: tuple[str, ...] | None = None, supervised: bool | None = None,
                      neighbours: str = "replace_one", n_features: int | None = None, classes: Any = None,
                      name: str = "", float_events: bool = True) -> WrappedMechanism:
    """An unfitted estimator of ``diffprivlib.models`` as an auditable mechanism: the data are
    records as rows (features, then the label for a supervised model), the release is the fitted
    parameter vector (:data:`MODEL_OUTPUTS`, or ``outputs``; trees and forests: the class
    probabilities on a fixed public grid), the claim ``model.epsilon``-DP.

    diffprivlib does not state the neighbour relation of its models; their calibration divides
    by the public dataset size or truncates at it (e.g. GaussianNB's class counts), i.e. bounded
    DP: ``replace_one`` by default. ``n_features`` (default: from the bounds, else 2) and
    ``classes`` (default: the model's, else 0 and 1) shape the rows the generators build.
    """
    from dpharness.verifiers.wrap import wrap

    require("diffprivlib", "diffprivlib")
    cls_name = type(model).__name__
    if not (hasattr(model, "fit") and hasattr(model, "get_params") and hasattr(model, "epsilon")):
        raise TypeError(f"diffprivlib_model takes an estimator of diffprivlib.models (e.g. GaussianNB(epsilon=1, "
                        f"bounds=...)), got {cls_name}")
    outs = tuple(outputs) if outputs is not None else MODEL_OUTPUTS.get(cls_name)
    if not outs:
        raise ValueError(f"no default outputs for {cls_name}: pass outputs=(fitted attribute names, ...); "
                         f"defaults exist for {', '.join(MODEL_OUTPUTS)}")
    sup = (cls_name not in _UNSUPERVISED) if supervised is None else bool(supervised)
    space = model_space(model, sup, n_features, classes)
    d = space["width"] - (1 if sup else 0)
    grid = grid_points(np.asarray(space["lower"][:d]), np.asarray(space["upper"][:d]))
    attrs = {"seeded": "random_state" in model.get_params(), **space}
    if cls_name in _MISSING_OK:
        attrs["missing_values"] = True
    return wrap(_DplModelRelease(model, outs, sup, grid, space.get("classes")), epsilon=float(model.epsilon),
                neighbours=neighbours, kind="real", name=name or f"diffprivlib {cls_name}", float_events=float_events,
                attributes=attrs)
