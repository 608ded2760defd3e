"""python-dp (Google's differential-privacy library): an aggregation of
``pydp.algorithms.laplacian`` (counts, bounded sums, means, variances, quantiles) with its
constructor arguments as an auditable mechanism (docs/adapters.md, "python-dp"); epsilon, delta
and the contribution bound are read from the object it builds. python-dp draws from the operating
system and cannot be seeded (``seeded`` is False).
"""

from __future__ import annotations

import numbers
from typing import TYPE_CHECKING, Any

import numpy as np

from dpharness.adapters.common import as_array, quiet, require
from dpharness.adapters.library import Library, Target

if TYPE_CHECKING:  # the verifier is imported when an adapter is built: reading the table of libraries stays cheap
    from dpharness.verifiers.wrap import WrappedMechanism

__all__ = ["pydp", "PYDP_ALGORITHMS", "LIBRARY"]

#: The aggregations of ``pydp.algorithms.laplacian``: name -> whether the output is a count
#: (an integer whatever ``dtype`` says).
PYDP_ALGORITHMS: dict[str, bool] = {
    "Count": True, "BoundedSum": False, "BoundedMean": False, "BoundedVariance": False,
    "BoundedStandardDeviation": False, "Median": False, "Percentile": False, "Max": False, "Min": False,
}


class _PydpRelease:
    """``size`` results of one python-dp aggregation on ``data`` (one record per entry). One object
    serves every release: ``quick_result`` resets its budget and state before each (python-dp 1.1),
    so the releases are independent. Only the class name and its arguments travel to workers (the
    C++ object does not pickle)."""

    def __init__(self, algorithm: str, params: dict) -> None:
        self.algorithm, self.params = algorithm, params

    def __call__(self, data: Any, size: int, rng: np.random.Generator) -> np.ndarray:
        a = as_array(data)
        if a.ndim != 1:
            raise ValueError(f"python-dp {self.algorithm} takes one number per record (a 1-D list or array), "
                             f"got shape {a.shape}")
        integral = self.params.get("dtype", "int") == "int"
        values = a.astype(np.int64 if integral else np.float64).tolist()  # python-dp takes a list
        m = quiet(lambda: getattr(require("pydp.algorithms.laplacian", "python-dp"), self.algorithm)(**self.params))
        return np.asarray([m.quick_result(values) for _ in range(size)])


def pydp(algorithm: Any, *, name: str = "", float_events: bool = True, **params: Any) -> WrappedMechanism:
    """An aggregation of python-dp (Google's differential-privacy library) as an auditable
    mechanism on datasets of numbers (one record per entry; NaN records go in as they are).

    ``algorithm`` is a class of ``pydp.algorithms.laplacian`` (:data:`PYDP_ALGORITHMS`) or its
    name, and ``params`` its constructor arguments (``epsilon=``, ``delta=``, ``lower_bound=``,
    ``upper_bound=``, ``percentile=``, ``linf_sensitivity=``, ``dtype=`` ...). The object is built
    once here and its claim read from it: ``epsilon``/``delta``-DP for datasets that differ in one
    user's contributions, i.e. up to ``linf_sensitivity`` records added or removed (Google's
    library bounds each user's records per aggregation by ``linf_sensitivity``; 1 gives the plain
    ``add_remove`` claim, more a claim over the symmetric distance up to that many records).
    ``lower_bound``/``upper_bound`` become the generators' ``lower``/``upper``. Counts, and every
    aggregation with ``dtype="int"`` (python-dp's default), release integers (``finite``); the
    others release doubles (``real``, float events on by default).

    python-dp draws from the operating system and cannot be seeded: audits are valid at their
    level but not bit-reproducible (``seeded`` is False). A python-dp object does not expose its
    bounds, so an instance is refused: pass the class and its arguments.
    """
    from dpharness.verifiers.claims import ConstantMap
    from dpharness.verifiers.wrap import wrap

    mod = require("pydp.algorithms.laplacian", "python-dp")
    if isinstance(algorithm, str):
        algo_name = algorithm
    elif isinstance(algorithm, type):
        algo_name = algorithm.__name__
    else:
        raise TypeError(f"pydp takes a class of pydp.algorithms.laplacian (or its name) and its constructor "
                        f"arguments, e.g. adapters.pydp(BoundedMean, epsilon=1.0, lower_bound=0.0, upper_bound=1.0, "
                        f"dtype='float'); got an instance of {type(algorithm).__name__} (its bounds cannot be read "
                        f"back from it)")
    cls = getattr(mod, algo_name, None) if algo_name in PYDP_ALGORITHMS else None
    if cls is None or (isinstance(algorithm, type) and algorithm is not cls):
        raise ValueError(f"algorithm must be one of pydp.algorithms.laplacian.{{{', '.join(PYDP_ALGORITHMS)}}} "
                         f"or its name, got {algorithm!r}")
    try:
        obj = quiet(lambda: cls(**params))
    except TypeError as e:
        hint = ("; python-dp's dtype defaults to 'int': pass dtype='float' for real data"
                if "dtype" not in params and "incompatible" in str(e) else "")
        why = str(e).splitlines()[0].split(". The following")[0]  # pybind11 lists every overload after it
        raise ValueError(f"python-dp {algo_name}({', '.join(f'{k}={v!r}' for k, v in params.items())}): "
                         f"{why}{hint}") from None
    epsilon = float(obj.epsilon)
    delta = float(getattr(obj, "delta", 0.0) or 0.0)
    linf = getattr(obj, "linf_sensitivity", 1)
    linf = int(linf) if isinstance(linf, numbers.Integral) and linf > 1 else 1  # Percentile says "Not set"
    integral = PYDP_ALGORITHMS[algo_name] or getattr(obj, "dtype", "int") == "int"
    attrs: dict = {"seeded": False}
    lo, hi = params.get("lower_bound"), params.get("upper_bound")
    if isinstance(lo, numbers.Real) and isinstance(hi, numbers.Real):
        attrs.update(lower=float(lo), upper=float(hi))
    label = name or f"python-dp {algo_name}"
    release = _PydpRelease(algo_name, dict(params))
    if linf == 1:
        return wrap(release, epsilon=epsilon, delta=delta, neighbours="add_remove", kind="finite" if integral else "real",
                    name=label, attributes=attrs, float_events=float_events)
    return wrap(release, privacy_map=ConstantMap(epsilon, delta, up_to=float(linf)), input_metric="symmetric_distance",
                kind="finite" if integral else "real", name=label, attributes=attrs, float_events=float_events)


def _from_target(t: Target) -> WrappedMechanism:
    """``library: "pydp.algorithms.laplacian:Name"``: the class adapted with ``params`` as its
    constructor arguments (and the ``adapter`` options)."""
    return t.adapt(pydp, t.obj, **t.params, **t.adapter)


def _is_algorithm_name(obj: Any) -> bool:
    return isinstance(obj, str) and obj in PYDP_ALGORITHMS


# python-dp's classes are defined in its compiled module, _algorithms
LIBRARY = Library(dist="python-dp", root="pydp", takes="a python-dp algorithm class", adapt=pydp,
                  from_target=_from_target, modules=("pydp", "_algorithms"), recognises=_is_algorithm_name)
