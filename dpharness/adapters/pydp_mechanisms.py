"""python-dp beyond ``pydp.algorithms.laplacian``: its numerical mechanisms, partition selection
strategies, ``QuantileTree`` and the ``pydp.ml`` mechanisms as auditable mechanisms
(docs/adapters.md, "python-dp"). :func:`dpharness.adapters.pydp` dispatches here.

* :func:`pydp_numerical` -- ``LaplaceMechanism`` / ``GaussianMechanism``
  (``pydp.algorithms.numerical_mechanisms``): one value, ``value`` neighbours at the object's
  sensitivity;
* :func:`pydp_partition_selection` -- a strategy of ``pydp.algorithms.partition_selection``: the
  keep/drop decision for one partition given its number of users, ``value`` neighbours at 1;
* :func:`pydp_quantile_tree` -- ``pydp.algorithms.quantile_tree.QuantileTree``: quantiles of the
  records, one user adding or removing up to ``max_contributions_per_partition`` records;
* :func:`pydp_ml` -- a mechanism of ``pydp.ml.mechanisms`` (IBM diffprivlib's early mechanisms,
  vendored): one value, ``value`` neighbours at its sensitivity.

python-dp's C++ objects do not pickle: each release keeps the recipe (factory name and
arguments) and rebuilds the object in the process that samples. python-dp draws from the
operating system and cannot be seeded (``seeded`` is False).
"""

from __future__ import annotations

import copy
import math
import numbers
from typing import TYPE_CHECKING, Any

import numpy as np

from dpharness.adapters.common import quiet, require, scalar

if TYPE_CHECKING:  # the verifier is imported when an adapter is built: reading the table of libraries stays cheap
    from dpharness.verifiers.wrap import WrappedMechanism

__all__ = ["pydp_numerical", "pydp_partition_selection", "pydp_quantile_tree", "pydp_ml", "refusal", "NUMERICAL",
           "PARTITION_FACTORIES", "ML_MECHANISMS"]

_NM = "pydp.algorithms.numerical_mechanisms"
_PS = "pydp.algorithms.partition_selection"
#: The numerical mechanisms: class name -> the attribute holding the sensitivity their noise is
#: calibrated to (python-dp binds the C++ constructors that take one L1 resp. L2 sensitivity).
NUMERICAL: dict[str, str] = {"LaplaceMechanism": "sensitivity", "GaussianMechanism": "l2_sensitivity"}
#: The strategy factories of ``pydp.algorithms.partition_selection`` and the class of what they build.
PARTITION_FACTORIES: dict[str, str] = {
    "create_laplace_partition_strategy": "LaplacePartitionSelectionStrategy",
    "create_gaussian_partition_strategy": "GaussianPartitionSelectionStrategy",
    "create_truncated_geometric_partition_strategy": "TruncatedGeometricPartitionSelectionStrategy",
    "create_pre_thresholding_partition_strategy": "PreThresholdingPartitionSelectionStrategy",
    "create_partition_strategy": "",
}
#: The value mechanisms of ``pydp.ml.mechanisms``: class name -> whether they take integers.
ML_MECHANISMS: dict[str, bool] = {"Laplace": False, "LaplaceTruncated": False, "LaplaceFolded": False,
                                  "LaplaceBoundedDomain": False, "Geometric": True, "GeometricTruncated": True}


def refusal(exc: BaseException) -> str:
    """python-dp's own words for a refusal: the first line of a pybind11 error, without the list
    of overloads it appends, or of a C++ ``absl::Status`` (``RuntimeError: INVALID_ARGUMENT: ...``)."""
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0].split(". The following")[0].replace("Bad StatusOr access: ", "")


def _built(what: str, call: Any) -> Any:
    """``call()``; python-dp's refusals at build time (``RuntimeError`` from the C++ side, pybind11's
    ``TypeError`` for arguments of the wrong type) as a ``ValueError`` naming ``what``."""
    try:
        return quiet(call)
    except (RuntimeError, TypeError) as e:
        raise ValueError(f"python-dp refuses {what}: {refusal(e)}") from None


def _args(params: dict) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in params.items())


def _value(data: Any, what: str, integer: bool) -> float | int:
    """The one value ``what`` randomises: finite, and an integer when it takes integers."""
    v = scalar(data, what)
    if isinstance(v, bool) or not isinstance(v, numbers.Real) or not math.isfinite(v):
        raise ValueError(f"{what} takes one finite number, got {v!r}")
    if integer:
        if not float(v).is_integer():
            raise ValueError(f"{what} takes an integer value, got {v!r}")
        return int(v)
    return float(v)


# --------------------------------------------------------------------------------------------
# numerical mechanisms


class _NumericalRelease:
    """``size`` noisy copies of the one value, from ``LaplaceMechanism``/``GaussianMechanism``
    rebuilt from its arguments; ``integer``: python-dp's integer overload of ``add_noise``."""

    def __init__(self, cls_name: str, args: dict, integer: bool) -> None:
        self.cls_name, self.args, self.integer = cls_name, args, integer

    def __call__(self, data: Any, size: int, rng: np.random.Generator) -> np.ndarray:
        v = _value(data, f"python-dp {self.cls_name}", self.integer)
        m = getattr(require(_NM, "python-dp"), self.cls_name)(**self.args)
        return np.asarray([m.add_noise(v) for _ in range(size)])


def pydp_numerical(mechanism: Any, *, integer: bool = False, name: str = "", float_events: bool = True,
                   **params: Any) -> WrappedMechanism:
    """A numerical mechanism of python-dp (``LaplaceMechanism``, ``GaussianMechanism`` of
    ``pydp.algorithms.numerical_mechanisms``) as an auditable mechanism on one value: an instance,
    or the class (or its name) with its constructor arguments.

    The claim is read from the object: ε (and δ for Gaussian) for values at distance at most the
    sensitivity its noise is calibrated to (``value`` neighbours). python-dp binds the C++
    constructors that take a single sensitivity: ``LaplaceMechanism(epsilon, sensitivity)`` is
    the L1 sensitivity (the C++ builder's l0 x linf; ``mechanism.sensitivity``, the Laplace
    diversity is sensitivity / ε) and ``GaussianMechanism(epsilon, delta, sensitivity)`` the L2
    sensitivity (``mechanism.l2_sensitivity``); for one value both are |f - f'|
    (differential-privacy cc/algorithms/numerical-mechanisms.h). ``integer=True`` audits the
    integer overload of ``add_noise`` (integer values, integer outputs).
    """
    from dpharness.verifiers.wrap import wrap

    mod = require(_NM, "python-dp")
    if isinstance(mechanism, (str, type)):
        cls_name = mechanism if isinstance(mechanism, str) else mechanism.__name__
        if cls_name not in NUMERICAL:
            raise ValueError(f"pydp_numerical takes one of {', '.join(NUMERICAL)} (or an instance), got {cls_name!r}")
        obj = _built(f"{cls_name}({_args(params)})", lambda: getattr(mod, cls_name)(**params))
    else:
        if params:
            raise TypeError(f"pydp_numerical takes constructor arguments with a class, not with an instance: "
                            f"{', '.join(params)}")
        obj, cls_name = mechanism, type(mechanism).__name__
        if cls_name not in NUMERICAL:
            raise TypeError(f"pydp_numerical takes a LaplaceMechanism or GaussianMechanism of {_NM}, got {cls_name}")
    eps, sens = float(obj.epsilon), float(getattr(obj, NUMERICAL[cls_name]))
    delta = float(getattr(obj, "delta", 0.0) or 0.0)
    args = {"epsilon": eps, **({"delta": delta} if cls_name == "GaussianMechanism" else {}), "sensitivity": sens}
    return wrap(_NumericalRelease(cls_name, args, integer), epsilon=eps, delta=delta, neighbours="value",
                sensitivity=sens, kind="finite" if integer else "real", name=name or f"python-dp {cls_name}",
                attributes={"seeded": False}, float_events=float_events)


# --------------------------------------------------------------------------------------------
# partition selection


def _strategy(factory: str, args: dict) -> Any:
    """The strategy ``factory(**args)`` builds; a ``strategy_type`` given by name ("LAPLACE",
    "GAUSSIAN", "NEAR_TRUNCATED_GEOMETRIC") becomes python-dp's enum (names pickle and fit in YAML)."""
    mod = require(_PS, "python-dp")
    kind = args.get("strategy_type")
    if isinstance(kind, str):
        members = mod.PartitionSelectionStrategyType.__members__
        if kind.upper() not in members:
            raise ValueError(f"strategy_type must be one of {', '.join(members)}, got {kind!r}")
        args = {**args, "strategy_type": members[kind.upper()]}
    return getattr(mod, factory)(**args)


class _PartitionRelease:
    """``size`` keep/drop decisions (1/0) for one partition with ``num_users`` users, from the
    strategy rebuilt by its factory."""

    def __init__(self, factory: str, args: dict, label: str) -> None:
        self.factory, self.args, self.label = factory, args, label

    def __call__(self, data: Any, size: int, rng: np.random.Generator) -> np.ndarray:
        n = _value(data, f"{self.label} (a partition's number of users)", True)
        if n < 0:
            raise ValueError(f"{self.label} takes a number of users >= 0, got {n}")
        s = _strategy(self.factory, self.args)
        return np.asarray([bool(s.should_keep(n)) for _ in range(size)], dtype=np.int8)


def _recipe_of_strategy(strategy: Any) -> tuple[str, dict]:
    cls_name = type(strategy).__name__
    factory = next((f for f, c in PARTITION_FACTORIES.items() if c == cls_name), None)
    if factory is None or "PreThresholding" in cls_name:  # its underlying strategy cannot be read back
        raise TypeError(f"pydp_partition_selection cannot rebuild a {cls_name} instance: pass the factory and "
                        f"its arguments, e.g. (create_partition_strategy, strategy='laplace', epsilon=1.0, "
                        f"delta=1e-5, max_partitions_contributed=1, pre_threshold=5)")
    return factory, {"epsilon": float(strategy.epsilon), "delta": float(strategy.delta),
                     "max_partitions_contributed": int(strategy.max_partitions_contributed)}


def _keep_threshold(strategy: Any, cap: int = 1 << 20) -> int:
    """The fewest users kept with probability >= 1/2 (where the keep probability moves most)."""
    n = 1
    while n < cap and float(strategy.probability_of_keep(float(n))) < 0.5:
        n *= 2
    lo, hi = n // 2, n
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if float(strategy.probability_of_keep(float(mid))) < 0.5 else (lo, mid)
    return hi


def pydp_partition_selection(factory: Any, /, *, name: str = "", **params: Any) -> WrappedMechanism:
    """A partition selection strategy of python-dp as an auditable mechanism: whether one
    partition is kept (1) or dropped (0) given its number of users (the data: one integer >= 0).

    ``factory`` is a factory of ``pydp.algorithms.partition_selection`` (``create_partition_strategy``,
    ``create_laplace_partition_strategy`` ... or its name) with its arguments, or a strategy it
    built (not a pre-thresholding one, whose underlying strategy cannot be read back).

    Claim (Google's differential-privacy, cc/algorithms/partition-selection.h and
    common_docs/pre_thresholding.md): the set of kept partitions is (ε, δ)-DP when one privacy
    unit (user) is added or removed and contributes to at most ``max_partitions_contributed``
    partitions, each counting it once. One partition's decision is a marginal of that release
    and a user moves its count by at most 1: ``value`` neighbours at distance 1, held to the whole
    (ε, δ) (sound; loose when ``max_partitions_contributed`` > 1, as each partition then spends a
    share). The generators get the domain [0, 2T] and bounds lower=0, upper=T, with T the fewest
    users kept with probability >= 1/2, so the pairs sit at 0 vs 1 (where δ is spent) and where
    the keep probability moves.
    """
    from dpharness.verifiers.wrap import wrap

    if isinstance(factory, str) or callable(factory) and getattr(factory, "__name__", "") in PARTITION_FACTORIES:
        factory = factory if isinstance(factory, str) else factory.__name__
        if factory not in PARTITION_FACTORIES:
            raise ValueError(f"factory must be one of {_PS}.{{{', '.join(PARTITION_FACTORIES)}}}, got {factory!r}")
        args = dict(params)
        if hasattr(args.get("strategy_type"), "name"):  # python-dp's enum: kept by name (it need not pickle)
            args["strategy_type"] = args["strategy_type"].name
    else:
        if params:
            raise TypeError(f"pydp_partition_selection takes arguments with a factory, not with a strategy: "
                            f"{', '.join(params)}")
        factory, args = _recipe_of_strategy(factory)
    obj = _built(f"{factory}({_args(args)})", lambda: _strategy(factory, args))
    if not hasattr(obj, "should_keep"):
        raise TypeError(f"{factory} did not build a partition selection strategy (got {type(obj).__name__})")
    eps, delta = float(obj.epsilon), float(obj.delta)
    t = _keep_threshold(obj)
    label = name or f"python-dp {type(obj).__name__}"
    return wrap(_PartitionRelease(factory, args, label), epsilon=eps, delta=delta, neighbours="value", sensitivity=1.0,
                kind="finite", name=label, input_domain={"interval": [0.0, float(2 * t)]},
                attributes={"seeded": False, "lower": 0.0, "upper": float(t)}, float_events=False)


# --------------------------------------------------------------------------------------------
# QuantileTree

_TREE_ARGS = ("lower", "upper", "tree_height", "branching_factor")
_QUANTILE_ARGS = ("epsilon", "delta", "max_partitions_contributed", "max_contributions_per_partition", "quantiles",
                  "noise_type")


class _TreeRelease:
    """``size`` releases of ``compute_quantiles`` on one tree built from the records (each call
    draws fresh noise on the tree's counts)."""

    def __init__(self, tree: dict, query: dict) -> None:
        self.tree, self.query = tree, query

    def __call__(self, data: Any, size: int, rng: np.random.Generator) -> np.ndarray:
        a = np.asarray(data, dtype=np.float64)
        if a.ndim != 1:
            raise ValueError(f"python-dp QuantileTree takes one number per record (a 1-D list or array), got shape {a.shape}")
        bad = np.flatnonzero(~np.isfinite(a))
        if bad.size:
            raise ValueError(f"python-dp QuantileTree takes finite records, got record {int(bad[0])} = {float(a[bad[0]])!r}")
        t = require("pydp.algorithms.quantile_tree", "python-dp").QuantileTree(**self.tree)
        for x in a.tolist():
            t.add_entry(x)
        q = self.query
        return np.asarray([t.compute_quantiles(q["epsilon"], q["delta"], q["max_partitions_contributed"],
                                               q["max_contributions_per_partition"], q["quantiles"], q["noise_type"])
                           for _ in range(size)], dtype=np.float64)


def pydp_quantile_tree(*, lower: float, upper: float, tree_height: int = 4, branching_factor: int = 16,
                       epsilon: float, delta: float = 0.0, quantiles: Any = (0.5,), max_partitions_contributed: int = 1,
                       max_contributions_per_partition: int = 1, noise_type: str = "laplace", name: str = "",
                       float_events: bool = True) -> WrappedMechanism:
    """python-dp's ``QuantileTree(lower, upper, tree_height, branching_factor)`` filled with the
    records (one number each, clamped to [lower, upper] by the tree) and its
    ``compute_quantiles(epsilon, delta, max_partitions_contributed,
    max_contributions_per_partition, quantiles, noise_type)`` as an auditable mechanism releasing
    the vector of quantiles.

    Claim (Google's differential-privacy, cc/algorithms/quantile-tree.h): (ε, δ)-DP for one user
    contributing at most ``max_contributions_per_partition`` records to the tree (and to at most
    ``max_partitions_contributed`` trees): ``add_remove`` when that is 1, otherwise a privacy map
    over the symmetric distance holding ε up to that many records. ``noise_type`` is "laplace"
    or "gaussian" (which needs δ in (0, 1)). The arguments are checked by building the tree and
    computing once here; python-dp's refusals become ``ValueError``.
    """
    from dpharness.verifiers.claims import ConstantMap
    from dpharness.verifiers.wrap import wrap

    tree = {"lower": float(lower), "upper": float(upper), "tree_height": int(tree_height),
            "branching_factor": int(branching_factor)}
    query = {"epsilon": float(epsilon), "delta": float(delta), "max_partitions_contributed": int(max_partitions_contributed),
             "max_contributions_per_partition": int(max_contributions_per_partition),
             "quantiles": [float(q) for q in np.atleast_1d(quantiles)], "noise_type": str(noise_type)}
    release = _TreeRelease(tree, query)
    _built(f"QuantileTree({_args(tree)}).compute_quantiles({_args(query)})",
           lambda: release([0.5 * (tree["lower"] + tree["upper"])], 1, np.random.default_rng(0)))
    label = name or "python-dp QuantileTree"
    attrs = {"seeded": False, "lower": tree["lower"], "upper": tree["upper"]}
    c = query["max_contributions_per_partition"]
    if c == 1:
        return wrap(release, epsilon=query["epsilon"], delta=query["delta"], neighbours="add_remove", kind="real",
                    name=label, attributes=attrs, float_events=float_events)
    return wrap(release, privacy_map=ConstantMap(query["epsilon"], query["delta"], up_to=float(c)),
                input_metric="symmetric_distance", kind="real", name=label, attributes=attrs, float_events=float_events)


# --------------------------------------------------------------------------------------------
# pydp.ml mechanisms

_ML_SETTERS = ("sensitivity", "bounds", "probability")


def _ml_build(cls_name: str, params: dict) -> Any:
    """A ``pydp.ml.mechanisms`` object configured through its setters: ``epsilon`` (and ``delta``)
    -> ``set_epsilon_delta``, ``sensitivity``, ``bounds`` (lower, upper), ``probability``."""
    mod = require("pydp.ml.mechanisms.laplace" if "Laplace" in cls_name else "pydp.ml.mechanisms.geometric", "python-dp")
    unknown = sorted(set(params) - {"epsilon", "delta", *_ML_SETTERS})
    if unknown:
        raise TypeError(f"pydp.ml {cls_name} is configured by epsilon, delta, {', '.join(_ML_SETTERS)}; got {unknown[0]!r}")
    m = getattr(mod, cls_name)()
    m.set_epsilon_delta(params.get("epsilon", 1.0), params.get("delta", 0.0))
    for k in _ML_SETTERS:
        if k in params:
            v = params[k]
            getattr(m, f"set_{k}")(*v) if k == "bounds" else getattr(m, f"set_{k}")(v)
    return m


class _MlRelease:
    """``size`` randomisations of the one value by a copy of the ``pydp.ml`` mechanism."""

    def __init__(self, mechanism: Any, integer: bool) -> None:
        self.mechanism, self.integer = mechanism, integer

    def __call__(self, data: Any, size: int, rng: np.random.Generator) -> np.ndarray:
        m = copy.deepcopy(self.mechanism)
        v = _value(data, f"python-dp ml {type(m).__name__}", self.integer)
        return np.asarray(quiet(lambda: [m.randomise(v) for _ in range(size)]))


def pydp_ml(mechanism: Any, *, name: str = "", float_events: bool = True, **params: Any) -> WrappedMechanism:
    """A value mechanism of ``pydp.ml.mechanisms`` (``Laplace``, ``LaplaceTruncated``,
    ``LaplaceFolded``, ``LaplaceBoundedDomain``, ``Geometric``, ``GeometricTruncated``: python-dp's
    copy of IBM diffprivlib's early mechanisms) as an auditable mechanism on one value: a
    configured instance, or the class (or its name) with ``epsilon``, ``delta``, ``sensitivity``,
    ``bounds`` = (lower, upper) and ``probability`` (the geometric ones) for its setters.

    Claim (the docstrings, after diffprivlib): (ε, δ)-DP for values at distance at most
    ``sensitivity`` (``value`` neighbours), both inside the bounds for the bounded variants. The
    mechanism is tried once on a value inside its domain here, so a mechanism that cannot release
    (python-dp 1.1.5's ``Laplace``, ``LaplaceTruncated``, ``LaplaceFolded`` and ``Geometric``
    without a probability) is refused with a ``ValueError`` quoting its error.
    """
    from dpharness.verifiers.wrap import wrap

    require("pydp.ml.mechanisms.base", "python-dp")
    if isinstance(mechanism, (str, type)):
        cls_name = mechanism if isinstance(mechanism, str) else mechanism.__name__
        if cls_name not in ML_MECHANISMS:
            raise ValueError(f"pydp_ml takes one of pydp.ml.mechanisms' {', '.join(ML_MECHANISMS)}, got {cls_name!r}")
        try:
            obj = quiet(lambda: _ml_build(cls_name, params))
        except (TypeError, ValueError) as e:
            raise ValueError(f"pydp.ml {cls_name}({_args(params)}): {e}") from None
    else:
        if params:
            raise TypeError(f"pydp_ml takes setter arguments with a class, not with an instance: {', '.join(params)}")
        obj, cls_name = mechanism, type(mechanism).__name__
        if cls_name not in ML_MECHANISMS:
            raise TypeError(f"pydp_ml takes a value mechanism of pydp.ml.mechanisms ({', '.join(ML_MECHANISMS)}), got "
                            f"{cls_name}")
    integer = ML_MECHANISMS[cls_name]
    lo, hi = getattr(obj, "_lower_bound", None), getattr(obj, "_upper_bound", None)
    bounded = lo is not None and hi is not None
    probe = (math.ceil(lo) if integer else 0.5 * (lo + hi)) if bounded else 0
    try:  # python-dp 1.1.5's ml mechanisms fail at their first release: say so when adapting, not mid-audit
        _MlRelease(obj, integer)(probe, 1, np.random.default_rng(0))
    except (TypeError, ValueError, AttributeError) as e:
        hint = ("; pydp.ml's geometric mechanisms need probability= (set_probability)"
                if integer and getattr(obj, "_probability", None) is None else "")
        raise ValueError(f"python-dp ml {cls_name} cannot release (randomise({probe!r}) raised {type(e).__name__}: "
                         f"{refusal(e)}){hint}") from None
    eps, delta = float(obj._epsilon), float(getattr(obj, "_delta", 0.0) or 0.0)
    attrs: dict = {"seeded": False}
    if bounded:
        attrs.update(lower=float(lo), upper=float(hi))
    return wrap(_MlRelease(obj, integer), epsilon=eps, delta=delta, neighbours="value",
                sensitivity=float(obj._sensitivity), kind="finite" if integer else "real",
                input_domain={"interval": [float(lo), float(hi)]} if bounded else None,
                name=name or f"python-dp ml {cls_name}", attributes=attrs, float_events=float_events)
