"""python-dp (Google's differential-privacy library): an aggregation of
``pydp.algorithms.laplacian`` (counts, bounded sums, means, variances, quantiles) with its
constructor arguments as an auditable mechanism (docs/adapters.md, "python-dp"); epsilon, delta
and the contribution bound are read from the object it builds. python-dp draws from the operating
system and cannot be seeded (``seeded`` is False).
"""

from __future__ import annotations

import inspect
import numbers
import pkgutil
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from dpharness.adapters.common import as_array, quiet, require
from dpharness.adapters.library import Library, Target
from dpharness.adapters.pydp_mechanisms import (ML_MECHANISMS, NUMERICAL, PARTITION_FACTORIES, pydp_ml, pydp_numerical,
                                                pydp_partition_selection, pydp_quantile_tree, refusal)

if TYPE_CHECKING:  # the verifier is imported when an adapter is built: reading the table of libraries stays cheap
    from dpharness.verifiers.wrap import WrappedMechanism

__all__ = ["pydp", "PYDP_ALGORITHMS", "LIBRARY", "api"]

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
        values = _records(a, self.algorithm, self.params.get("dtype", "int"))
        m = quiet(lambda: getattr(require("pydp.algorithms.laplacian", "python-dp"), self.algorithm)(**self.params))
        return np.asarray([m.quick_result(values) for _ in range(size)])


def _records(a: np.ndarray, algorithm: str, dtype: str) -> list:
    """The records as the list python-dp takes. Under an integer ``dtype`` (python-dp's default
    "int", or "int64") python-dp's bindings take integers only: a float record would be truncated
    towards zero by a cast (0.7 audited as 0) and NaN would become -2^63, which the binding then
    refuses with a raw overload error, so both are refused here naming the first such record."""
    if dtype not in ("int", "int64"):
        return a.astype(np.float64).tolist()  # NaN records go in: the bounded aggregations skip them
    if a.dtype.kind in "biu":
        return a.astype(np.int64).tolist()
    f = a.astype(np.float64)
    bad = np.flatnonzero(~np.isfinite(f))
    if bad.size:
        i = int(bad[0])
        raise ValueError(f"python-dp {algorithm} with dtype={dtype!r} takes integer records; record {i} is {float(f[i])!r} "
                         f"(pass dtype='float' to give it NaN records, which the bounded aggregations skip)")
    frac = np.flatnonzero(f != np.trunc(f))
    if frac.size:
        i = int(frac[0])
        raise ValueError(f"python-dp {algorithm} with dtype={dtype!r} takes integer records; record {i} is {float(f[i])!r}, "
                         f"which python-dp would truncate to {int(np.trunc(f[i]))} (pass dtype='float' for real data)")
    return f.astype(np.int64).tolist()


def pydp(algorithm: Any, *, name: str = "", float_events: bool = True, **params: Any) -> WrappedMechanism:
    """An aggregation of python-dp (Google's differential-privacy library) as an auditable
    mechanism on datasets of numbers (one record per entry), or any other ε-claiming object of
    python-dp, handed to its adapter (:func:`_route`): a numerical mechanism
    (:func:`~dpharness.adapters.pydp_mechanisms.pydp_numerical`), a partition selection factory or
    strategy (:func:`~dpharness.adapters.pydp_mechanisms.pydp_partition_selection`), ``QuantileTree``
    with its arguments (:func:`~dpharness.adapters.pydp_mechanisms.pydp_quantile_tree`) or a
    ``pydp.ml`` mechanism (:func:`~dpharness.adapters.pydp_mechanisms.pydp_ml`).

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
    other = _route(algorithm)
    if other is not None:
        return other(algorithm, name=name, float_events=float_events, **params)
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
        raise ValueError(f"python-dp {algo_name}({_args(params)}): {refusal(e)}{hint}") from None
    except RuntimeError as e:  # the C++ side's refusal (absl::Status), e.g. "INVALID_ARGUMENT: Epsilon must be ..."
        raise ValueError(f"python-dp refuses {algo_name}({_args(params)}): {refusal(e)}") from None
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


def _args(params: dict) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in params.items())


def _tree(obj: Any, *, name: str = "", float_events: bool = True, **params: Any) -> WrappedMechanism:
    if not isinstance(obj, (str, type)):
        raise TypeError("a QuantileTree instance does not expose its bounds: pass the class QuantileTree and its "
                        "arguments (lower, upper, tree_height, branching_factor, epsilon, delta, quantiles, ...)")
    return pydp_quantile_tree(name=name, float_events=float_events, **params)


def _partition(obj: Any, *, name: str = "", float_events: bool = True, **params: Any) -> WrappedMechanism:
    return pydp_partition_selection(obj, name=name, **params)  # keep/drop decisions: no doubles released


def _refuse(why: str) -> Callable[..., WrappedMechanism]:
    def refuse(obj: Any, **_: Any) -> WrappedMechanism:
        what = obj if isinstance(obj, str) else getattr(obj, "__name__", type(obj).__name__)
        raise TypeError(f"python-dp {what} cannot be adapted: {why}")
    return refuse


_NOT_A_RELEASE = ("it releases nothing computed from data (a noise sampler, an accountant or a validator); audit "
                  "the mechanism that uses it")
_GAUSSIAN_NB = ("python-dp 1.1.5's pydp.ml GaussianNB cannot be fitted: its fit calls numpy.in1d (gone from NumPy 2.4) "
                "and LaplaceTruncated.randomise, which passes scale= to LaplaceDistribution.sample (which takes no "
                "argument)")


def _route(obj: Any) -> Callable[..., WrappedMechanism] | None:
    """The adapter for a python-dp object other than an aggregation of ``pydp.algorithms.laplacian``
    (None: that one, handled by :func:`pydp`), told by its name, its class or its factory's name:
    python-dp's compiled classes live in its private ``_pydp`` module, so the name is what is stable."""
    if isinstance(obj, str):
        nm = obj
    elif isinstance(obj, type) or callable(obj) and not hasattr(obj, "randomise"):
        nm = getattr(obj, "__name__", "")
    else:
        nm = type(obj).__name__
    module = (obj if isinstance(obj, type) else type(obj)).__module__ if not isinstance(obj, str) else ""
    if nm in PYDP_ALGORITHMS:
        return None
    if nm in NUMERICAL:
        return pydp_numerical
    if nm in PARTITION_FACTORIES or (nm and nm in PARTITION_FACTORIES.values()):
        return _partition
    if nm == "QuantileTree":
        return _tree
    if nm in ML_MECHANISMS and (isinstance(obj, str) or module.startswith("pydp.ml")):
        return pydp_ml
    if nm == "GaussianNB":
        return _refuse(_GAUSSIAN_NB)
    if nm in ("LaplaceDistribution", "GaussianDistribution", "GeometricDistribution", "BudgetAccountant", "Budget",
              "check_epsilon_delta"):
        return _refuse(_NOT_A_RELEASE)
    return None


def _from_target(t: Target) -> WrappedMechanism:
    """``library: "pydp.<module>:Name"``: the class or factory adapted with ``params`` as its
    arguments (and the ``adapter`` options); :func:`pydp` hands it to its adapter."""
    return t.adapt(pydp, t.obj, **t.params, **t.adapter)


def _is_python_dp_name(obj: Any) -> bool:
    return isinstance(obj, str) and (obj in PYDP_ALGORITHMS or obj in NUMERICAL or obj in PARTITION_FACTORIES
                                     or obj == "QuantileTree")


# --------------------------------------------------------------------------------------------
# the installed release's epsilon-claiming API

_SIG_LINE = re.compile(r"^\s*(?:\d+\.\s*)?\w+\(")


def _takes_epsilon(fn: Any) -> bool:
    """Whether ``fn`` has a parameter named ``epsilon``: from its signature, or for compiled
    (pybind11) callables, which have none, from the signature lines their docstring opens with."""
    try:
        return "epsilon" in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        doc = getattr(fn, "__doc__", None) or ""
        return any(re.search(r"\bepsilon\s*:", line) for line in doc.splitlines() if _SIG_LINE.match(line))


def _claims_epsilon(obj: Any) -> bool:
    if not inspect.isclass(obj):
        return _takes_epsilon(obj)
    if inspect.isabstract(obj):
        return False
    methods = [getattr(obj, "__init__", None)] + [getattr(obj, k, None) for k in dir(obj) if not k.startswith("_")]
    return _takes_epsilon(obj) or any(callable(m) and not inspect.isclass(m) and _takes_epsilon(m) for m in methods)


def api() -> list[str]:
    """The installed python-dp's ε-claiming public API, as sorted import paths ``"pkg.mod:Name"``.

    Rule: every public module of ``pydp`` (no part of its path starts with ``_``) is walked; a
    public attribute (no leading ``_``) counts when it is a class or function of python-dp itself
    (its ``__module__`` is ``pydp...`` or one of the compiled ``pydp._pydp`` submodules) and takes a
    parameter named ``epsilon`` -- in its constructor or call, or in a public method
    (``QuantileTree.compute_quantiles``, the ``set_epsilon`` of ``pydp.ml``'s mechanisms) -- and is
    not abstract. Compiled callables have no signature: their docstring's signature lines are
    read. Each object is listed once: under the module that defines it when that module is public
    and holds it, else under the shallowest public module holding it (ties: alphabetical).
    Samplers, accountants and validators that take ``epsilon`` are listed too; the catalogue says
    why they are not audited.
    """
    root = require("pydp", "python-dp")
    compiled = require("pydp._pydp", "python-dp")
    own = {"pydp", *(n for n, v in vars(compiled).items() if inspect.ismodule(v))}
    holders: dict[int, tuple[Any, str, list[str]]] = {}
    modules = [root.__name__] + [m.name for m in pkgutil.walk_packages(root.__path__, "pydp.")]
    for mod_name in modules:
        if any(part.startswith("_") for part in mod_name.split(".")):
            continue
        mod = require(mod_name, "python-dp")
        for attr, obj in vars(mod).items():
            if attr.startswith("_") or inspect.ismodule(obj) or not callable(obj):
                continue
            if str(getattr(obj, "__module__", "") or "").split(".")[0] not in own:
                continue
            holders.setdefault(id(obj), (obj, attr, []))[2].append(mod_name)
    out = []
    for obj, attr, mods in holders.values():
        if not _claims_epsilon(obj):
            continue
        home = getattr(obj, "__module__", "")
        where = home if home in mods else min(mods, key=lambda m: (m.count("."), m))
        out.append(f"{where}:{attr}")
    return sorted(out)


# python-dp's compiled classes report the submodules of pydp._pydp as their module (QuantileTree: "_algorithms")
_COMPILED = ("_algorithms", "_mechanisms", "_partition_selection", "_distributions", "_util")
LIBRARY = Library(dist="python-dp", root="pydp", takes="a python-dp class, mechanism or strategy", adapt=pydp,
                  from_target=_from_target, modules=("pydp", *_COMPILED), recognises=_is_python_dp_name, api=api)
