"""diffprivlib (IBM): mechanisms, tools and models as auditable mechanisms (docs/adapters.md,
"diffprivlib").

* :func:`diffprivlib_mechanism` -- a mechanism object: epsilon, delta and sensitivity read from it;
* :func:`diffprivlib_tool` -- a function of ``diffprivlib.tools``: epsilon from the arguments;
* :func:`diffprivlib_model` -- an unfitted estimator of ``diffprivlib.models``: its fitted
  parameter vector is the release;
* :func:`diffprivlib` -- dispatches to the three.

diffprivlib 0.6+ is seeded from the audit's generator (an integer ``random_state`` drawn from it),
so its audits are reproducible; earlier releases draw from the operating system (the adapted
object's ``seeded`` attribute says which). The same calls work from diffprivlib 0.4 on.
"""

from __future__ import annotations

import copy
import inspect
import math
import numbers
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from dpharness.mechanisms.base import ParamError
from dpharness.adapters.common import as_array, quiet, require, scalar, seeds
from dpharness.adapters.diffprivlib_models import MODEL_OUTPUTS, diffprivlib_model
from dpharness.adapters.library import Library, Target, TargetError, did_you_mean

if TYPE_CHECKING:  # the verifier is imported when an adapter is built: reading the table of libraries stays cheap
    from dpharness.verifiers.wrap import WrappedMechanism

__all__ = ["diffprivlib", "diffprivlib_mechanism", "diffprivlib_tool", "diffprivlib_model", "TOOL_RELATIONS",
           "MODEL_OUTPUTS", "LIBRARY"]

# --------------------------------------------------------------------------------------------
# diffprivlib: mechanisms

_UTILITY_MECHANISMS = ("Exponential", "PermuteAndFlip")
_CATEGORY_MECHANISMS = ("ExponentialCategorical", "ExponentialHierarchical")
#: Mechanisms with no auditable release, and why (docs/adapters.md, "diffprivlib").
_UNSUPPORTED_MECHANISMS = {
    "Vector": "its release is the objective function plus a noise term drawn independently of the data (objective "
              "perturbation): the privacy is that of the minimiser over neighbouring datasets, a property of the "
              "solver using it; audit diffprivlib.models.LogisticRegression, its one user, instead",
}


def _constructor_params(cls: type) -> list[str]:
    try:
        sig = inspect.signature(cls.__init__)
    except (TypeError, ValueError):
        return []
    return [p for p, v in sig.parameters.items() if p != "self" and v.kind in (v.KEYWORD_ONLY, v.POSITIONAL_OR_KEYWORD)]


def _recipe(mech: Any) -> tuple[type, dict, bool]:
    """(class, constructor parameters, whether it takes ``random_state``) of a diffprivlib
    mechanism: diffprivlib keeps each constructor parameter as an attribute of the same name. The
    recipe pickles (the object may not: unseeded mechanisms hold the OS entropy source)."""
    cls = type(mech)
    params = _constructor_params(cls)
    kw = {p: getattr(mech, p) for p in params if p != "random_state" and hasattr(mech, p)}
    return cls, kw, "random_state" in params


def _reseeded(recipe: tuple[type, dict, bool], seed: int, **override: Any) -> Any:
    """The mechanism of ``recipe`` rebuilt with ``random_state=seed`` (and ``override``)."""
    cls, kw, seedable = recipe
    kw = {**kw, **override, **({"random_state": seed} if seedable else {})}
    return quiet(lambda: cls(**kw))


def _is_integer_mechanism(name: str) -> bool:
    return "Geometric" in name or name == "GaussianDiscrete"


class _DplMechanismRelease:
    """``size`` releases of a diffprivlib mechanism on ``data``: the mechanism rebuilt once per
    call with a seed drawn from ``rng``, then ``randomise`` called ``size`` times."""

    def __init__(self, mechanism: Any, mode: str) -> None:
        self.recipe, self.mode = _recipe(mechanism), mode
        # category mechanisms are rebuilt by copying (their constructor input is not kept)
        self.mechanism = mechanism if mode == "category" else None

    def __call__(self, data: Any, size: int, rng: np.random.Generator) -> np.ndarray:
        (seed,) = seeds(rng, 1)
        name = self.recipe[0].__name__
        if self.mode == "category":  # built from a utility list / hierarchy it does not keep: reseed a copy
            m = copy.copy(self.mechanism)
            m._rng = np.random.RandomState(seed)
            v = scalar(data, name)
            return np.asarray(quiet(lambda: [m.randomise(v) for _ in range(size)]), dtype=object)
        if self.mode == "bingham":  # a scalar t is the matrix diag(t, 0): |t - t'| is the spectral-norm distance
            m = _reseeded(self.recipe, seed)
            t = float(scalar(data, name))
            mat = np.array([[t, 0.0], [0.0, 0.0]])
            return np.asarray(quiet(lambda: [m.randomise(mat) for _ in range(size)]), dtype=np.float64)
        if self.mode == "utility":
            u = np.asarray(data, dtype=np.float64)
            if u.ndim != 1:
                raise ValueError(f"{name} takes a 1-D utility vector as data, got shape {u.shape}")
            m = _reseeded(self.recipe, seed, utility=u.tolist())  # diffprivlib wants a list
            return np.asarray(quiet(lambda: [m.randomise() for _ in range(size)]))
        m = _reseeded(self.recipe, seed)
        v = scalar(data, name)
        if self.mode == "integer":
            if isinstance(v, float) and not v.is_integer():
                raise ValueError(f"{name} takes an integer value, got {v!r}")
            v = int(v)
        elif self.mode == "real":
            v = float(v)
        return np.asarray(quiet(lambda: [m.randomise(v) for _ in range(size)]))


def diffprivlib_mechanism(mechanism: Any, *, name: str = "", float_events: bool = True) -> WrappedMechanism:
    """A diffprivlib mechanism object (``diffprivlib.mechanisms``) as an auditable mechanism.

    The claim is read from the object: ``epsilon``, ``delta`` and ``sensitivity``. The data is
    what the mechanism randomises, under the relation its calibration assumes:

    * value mechanisms (``Laplace`` and its truncated/folded/bounded variants, ``Gaussian``,
      ``GaussianAnalytic``, ``GaussianDiscrete``, ``Geometric`` and variants, ``Staircase``,
      ``Snapping``, ``LaplaceBoundedNoise``): one number, ``value`` neighbours at distance at most
      ``sensitivity`` (integer data and finite outputs for the geometric and discrete ones);
    * ``Exponential``, ``PermuteAndFlip``: the utility vector (the object's own utility is
      replaced by the data), ``score_linf`` neighbours (``score_monotone`` when ``monotonic``);
    * ``Binary`` (randomised response on two labels): the label, ``local`` neighbours over
      ``{value0, value1}``; ``ExponentialCategorical`` and ``ExponentialHierarchical`` (an input
      category randomised to a nearby one): the category, ``local`` neighbours over its values;
    * ``Bingham`` (a unit eigenvector of a symmetric matrix, calibrated to matrices within
      ``sensitivity`` of each other in spectral norm): a number t standing for the matrix
      diag(t, 0), ``value`` neighbours (|t - t'| is the matrices' spectral distance); the
      release is the 2-vector. Only this one-parameter family of 2x2 matrices is audited.
    * ``Vector`` is refused (:data:`_UNSUPPORTED_MECHANISMS` says why).
    """
    from dpharness.verifiers.wrap import wrap

    require("diffprivlib", "diffprivlib")
    cls_name = type(mechanism).__name__
    if not hasattr(mechanism, "randomise") or not hasattr(mechanism, "epsilon"):
        raise TypeError(f"diffprivlib_mechanism takes a diffprivlib mechanism object (e.g. "
                        f"diffprivlib.mechanisms.Laplace(epsilon=1, sensitivity=1)), got {cls_name}")
    if cls_name in _UNSUPPORTED_MECHANISMS:
        raise TypeError(f"diffprivlib {cls_name} is not supported: {_UNSUPPORTED_MECHANISMS[cls_name]}")
    eps, dl = float(mechanism.epsilon), float(getattr(mechanism, "delta", 0.0) or 0.0)
    label = name or f"diffprivlib {cls_name}"
    seeded = {"seeded": _recipe(mechanism)[2]}  # random_state exists from diffprivlib 0.6 on
    if cls_name in _CATEGORY_MECHANISMS:
        values = list(getattr(mechanism, "_domain_values"))
        return wrap(_DplMechanismRelease(mechanism, "category"), epsilon=eps, delta=dl, neighbours="local",
                    input_domain=values, kind="finite", name=label, attributes={"seeded": True},
                    float_events=float_events)
    if cls_name == "Bingham":
        return wrap(_DplMechanismRelease(mechanism, "bingham"), epsilon=eps, delta=dl, neighbours="value",
                    sensitivity=float(mechanism.sensitivity), kind="real", name=label, attributes=seeded,
                    float_events=float_events)
    if cls_name == "Binary":
        return wrap(_DplMechanismRelease(mechanism, "label"), epsilon=eps, delta=dl, neighbours="local",
                    input_domain=[mechanism.value0, mechanism.value1], kind="finite", name=label,
                    attributes=seeded, float_events=float_events)
    sens = float(mechanism.sensitivity)
    if cls_name in _UTILITY_MECHANISMS:
        rel = "score_monotone" if getattr(mechanism, "monotonic", False) else "score_linf"
        attrs = {**seeded, **({"length": len(mechanism.utility)} if getattr(mechanism, "utility", None) is not None
                              else {})}
        return wrap(_DplMechanismRelease(mechanism, "utility"), epsilon=eps, delta=dl, neighbours=rel,
                    sensitivity=sens, kind="finite", name=label, attributes=attrs, float_events=float_events)
    integer = _is_integer_mechanism(cls_name)
    attrs = dict(seeded)
    lo, hi = getattr(mechanism, "lower", None), getattr(mechanism, "upper", None)
    if lo is not None and hi is not None and math.isfinite(float(lo)) and math.isfinite(float(hi)):
        attrs.update(lower=float(lo), upper=float(hi))
    return wrap(_DplMechanismRelease(mechanism, "integer" if integer else "real"), epsilon=eps, delta=dl,
                neighbours="value", sensitivity=sens, kind="finite" if integer else "real", name=label,
                attributes=attrs, float_events=float_events)


# --------------------------------------------------------------------------------------------
# diffprivlib: tools

#: The neighbour relation each tool is calibrated for (diffprivlib/tools/utils.py,
#: quantiles.py, histograms.py, 0.6.6): sensitivities divided by the dataset size n and output
#: truncation to [lower n, upper n] take n as public, i.e. replace-one (bounded DP); histograms
#: add Geometric noise of sensitivity 1 to each bin, i.e. add/remove (one record moves one bin).
TOOL_RELATIONS: dict[str, str] = {
    **{t: "replace_one" for t in ("mean", "nanmean", "var", "nanvar", "std", "nanstd", "sum", "nansum",
                                  "count_nonzero", "median", "quantile", "percentile")},
    "histogram": "add_remove",
    "histogram2d": "add_remove",
    "histogramdd": "add_remove",
}
_INTEGER_TOOLS = ("count_nonzero", "histogram", "histogram2d", "histogramdd")


def _takes(fn: Callable[..., Any], param: str) -> bool:
    """Whether ``fn`` names ``param`` (diffprivlib's tools swallow unknown keywords with a warning:
    ``random_state`` exists from 0.6 on, and passing it earlier would silently not seed)."""
    try:
        return param in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


class _DplToolRelease:
    """``size`` releases of a diffprivlib tool on ``data``: one call per release, each with a
    seed drawn from ``rng`` (diffprivlib 0.6+; earlier tools draw from the operating system) and a
    fresh ``BudgetAccountant`` (the default one records every spend, and its ledger would grow
    with every release)."""

    def __init__(self, tool: str, epsilon: float, kwargs: dict) -> None:
        self.tool, self.epsilon, self.kwargs = tool, epsilon, kwargs

    def __call__(self, data: Any, size: int, rng: np.random.Generator) -> np.ndarray:
        fn = getattr(require("diffprivlib.tools", "diffprivlib"), self.tool)
        accountant = require("diffprivlib.accountant", "diffprivlib").BudgetAccountant
        seeded = _takes(fn, "random_state")
        a = as_array(data)
        if self.tool == "histogram2d":  # rows (x, y): the tool takes the two columns as two arrays
            if a.ndim != 2 or a.shape[1] != 2:
                raise ValueError(f"histogram2d takes records as rows (x, y), got shape {a.shape}")
            args: tuple = (a[:, 0], a[:, 1])
        else:
            args = (a,)
        out = []
        for s in seeds(rng, size):
            kw = {**self.kwargs, **({"random_state": s} if seeded else {})}
            try:
                r = quiet(lambda kw=kw: fn(*args, epsilon=self.epsilon, accountant=accountant(), **kw))
            except (ValueError, TypeError, IndexError):
                raise
            except Exception as exc:  # diffprivlib raises e.g. ZeroDivisionError on no records: not a dataset it takes
                if a.shape[0] == 0:
                    raise ValueError(f"diffprivlib.tools.{self.tool} rejects an empty dataset "
                                     f"({type(exc).__name__}: {exc})") from exc
                raise
            out.append(r[0] if isinstance(r, tuple) else r)  # histograms: (counts, edges); the edges are public
        return np.asarray(out)


def _bad_keyword(fn: Callable[..., Any], tool_name: str, kwargs: dict) -> tuple[str, str] | None:
    """(keyword, message) for the first keyword of ``kwargs`` that the tool ``fn`` does not name
    (or that the adapter sets itself), else None. diffprivlib's tools take ``**unused_args`` and
    only warn (a warning the adapter silences per call), so a misspelt ``bound=`` for ``bounds=``
    would silently audit the tool without bounds."""
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):  # a compiled or wrapped function that does not describe itself
        return None
    named = [n for n, p in params.items() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    data_args = named[:2] if tool_name == "histogram2d" else named[:1]
    takes = [n for n in named if n not in (*data_args, "epsilon", "accountant", "random_state")]
    for k in kwargs:
        if k not in takes:
            why = ("is set by the adapter" if k in ("accountant", "random_state") else
                   "is the data" if k in data_args else f"is not an argument of diffprivlib.tools.{tool_name}")
            return k, (f"{k!r} {why}{did_you_mean(k, takes) if k not in named else ''}; the tool takes "
                       f"{', '.join(takes)}")
    return None


def diffprivlib_tool(tool: Any, *, epsilon: float, neighbours: str | None = None, kind: str | None = None,
                     name: str = "", float_events: bool = True, **kwargs: Any) -> WrappedMechanism:
    """A function of ``diffprivlib.tools`` (``mean``, ``var``, ``std``, ``sum``, ``count_nonzero``,
    ``median``, ``quantile``, ``percentile``, ``histogram`` ... or its name) as an auditable
    mechanism on datasets of records.

    ``epsilon`` and ``kwargs`` (``bounds=``, ``range=``, ``bins=``, ``quant=`` ...) are passed to
    every call; the claim is epsilon-DP under :data:`TOOL_RELATIONS` of the tool (or
    ``neighbours``, required for other tools). ``kind``: finite for counts and histograms, real
    otherwise, unless given. Histograms release the counts (the bin edges do not depend on the
    data when ``range`` is given). ``bounds``/``range`` become the generators' ``lower``/``upper``.
    """
    from dpharness.verifiers.wrap import wrap

    tools = require("diffprivlib.tools", "diffprivlib")
    tool_name = tool if isinstance(tool, str) else getattr(tool, "__name__", "")
    if not tool_name or getattr(tools, tool_name, None) is None or (not isinstance(tool, str) and
                                                                     getattr(tools, tool_name) is not tool):
        raise ValueError(f"tool must be a function of diffprivlib.tools or its name (e.g. 'mean'), got {tool!r}")
    bad = _bad_keyword(getattr(tools, tool_name), tool_name, kwargs)
    if bad is not None:
        raise ValueError(bad[1])
    try:
        eps_value = float(epsilon)
    except (TypeError, ValueError):
        eps_value = math.nan
    if not (eps_value > 0 and math.isfinite(eps_value)):
        raise ParamError("epsilon", f"epsilon must be a finite number > 0 (the claim of diffprivlib.tools."
                                    f"{tool_name}), got {epsilon!r}")
    b = kwargs.get("bounds", kwargs.get("range"))
    if b is not None and len(b) == 2 and all(isinstance(x, numbers.Real) for x in b) and not float(b[0]) < float(b[1]):
        key = "bounds" if "bounds" in kwargs else "range"
        raise ParamError(key, f"{key} must be (lower, upper) with lower < upper, got {tuple(b)!r}")
    rel = neighbours if neighbours is not None else TOOL_RELATIONS.get(tool_name)
    if rel is None:
        raise ValueError(f"no documented neighbour relation for diffprivlib.tools.{tool_name}: pass neighbours= "
                         f"(tools with one: {', '.join(TOOL_RELATIONS)})")
    if kind is None:
        integral = np.issubdtype(np.dtype(kwargs["dtype"]), np.integer) if kwargs.get("dtype") is not None else False
        kind = "finite" if tool_name in _INTEGER_TOOLS or integral else "real"
    attrs: dict = {"seeded": _takes(getattr(tools, tool_name), "random_state")}
    if tool_name.startswith("nan"):  # their claim covers data with missing values, which they ignore
        attrs["missing_values"] = True
    b = kwargs.get("bounds", kwargs.get("range"))
    if b is not None and len(b) == 2 and all(isinstance(x, numbers.Real) for x in b):
        attrs.update(lower=float(b[0]), upper=float(b[1]))
    elif tool_name in ("histogramdd", "histogram2d") and b is not None and all(
            np.ndim(r) == 1 and len(r) == 2 for r in b):  # one (min, max) per column: row records
        attrs.update(lower=[float(r[0]) for r in b], upper=[float(r[1]) for r in b])
    elif tool_name == "histogram2d":
        attrs["width"] = 2
    return wrap(_DplToolRelease(tool_name, float(epsilon), dict(kwargs)), epsilon=epsilon, neighbours=rel, kind=kind,
                name=name or f"diffprivlib.tools.{tool_name}", attributes=attrs, float_events=float_events)


def diffprivlib(obj: Any, **kwargs: Any) -> WrappedMechanism:
    """Dispatch to :func:`diffprivlib_mechanism` (a mechanism object), :func:`diffprivlib_tool`
    (a function of ``diffprivlib.tools`` or its name; pass ``epsilon=``) or
    :func:`diffprivlib_model` (an estimator of ``diffprivlib.models``)."""
    module = getattr(obj, "__module__", "") or type(obj).__module__
    if isinstance(obj, str) or (callable(obj) and module.startswith("diffprivlib.tools")):
        return diffprivlib_tool(obj, **kwargs)
    if hasattr(obj, "fit") and hasattr(obj, "get_params"):
        return diffprivlib_model(obj, **kwargs)
    return diffprivlib_mechanism(obj, **kwargs)


#: The parameters diffprivlib checks to be tuples (a YAML list becomes one).
_TUPLE_PARAMS = ("bounds", "bounds_X", "bounds_y", "range")


def _from_target(t: Target) -> WrappedMechanism:
    """``library: "diffprivlib.<module>:Name"``: a mechanism or estimator class built with
    ``params`` and adapted, or a tool adapted with ``params`` as its arguments."""
    # YAML has no tuples, and diffprivlib wants its bounds/ranges as (min, max) tuples (but its
    # utility lists and hierarchies as lists)
    params = {k: tuple(v) if isinstance(v, list) and k in _TUPLE_PARAMS else v for k, v in t.params.items()}
    if isinstance(t.obj, type):  # diffprivlib mechanism or estimator
        made = t.make(**params)
        if hasattr(made, "fit") and hasattr(made, "get_params"):
            return t.adapt(diffprivlib_model, made, **t.adapter)
        return t.adapt(diffprivlib_mechanism, made, **t.adapter)
    if callable(t.obj) and getattr(t.obj, "__module__", "").startswith("diffprivlib.tools"):
        if "epsilon" not in params:
            raise TargetError(f"{t.path} is a diffprivlib tool: give epsilon: (and its other arguments, e.g. "
                              "bounds:) under params:", "params")
        bad = _bad_keyword(t.obj, t.obj.__name__, {k: v for k, v in params.items() if k != "epsilon"})
        if bad is not None:  # named here, so that the config error points at the key
            raise TargetError(bad[1], f"params.{bad[0]}")
        return t.adapt(diffprivlib_tool, t.obj, **params, **t.adapter)
    raise TargetError(f"{t.path} is neither a class of diffprivlib (mechanism or estimator) nor a function of "
                      "diffprivlib.tools", "library")


#: The packages whose public names make up diffprivlib's privacy-claiming API.
API_MODULES = ("diffprivlib.mechanisms", "diffprivlib.tools", "diffprivlib.models")


def api() -> list[str]:
    """The installed diffprivlib's privacy-claiming public API, as sorted import paths
    ``"diffprivlib.tools:mean"``.

    The rule: every public name (no leading underscore) of ``diffprivlib.mechanisms``,
    ``diffprivlib.tools`` and ``diffprivlib.models`` -- the three packages diffprivlib documents
    its mechanisms, tools and models in -- that is a function, or a concrete (not abstract) class,
    whose signature (a class: its constructor's) names ``epsilon`` or ``delta``. Modules, abstract
    bases (``DPMechanism``) and mixins without a privacy parameter are not part of it; the budget
    accountant (``diffprivlib.accountant``) spends a budget rather than claiming one.
    """
    out = []
    for mod_name in API_MODULES:
        mod = require(mod_name, "diffprivlib")
        for n in dir(mod):
            obj = getattr(mod, n)
            if n.startswith("_") or inspect.ismodule(obj) or not callable(obj):
                continue
            if inspect.isclass(obj) and inspect.isabstract(obj):
                continue
            try:
                params = inspect.signature(obj).parameters
            except (TypeError, ValueError):  # does not describe itself: no claim to read
                continue
            if "epsilon" in params or "delta" in params:
                out.append(f"{mod_name}:{n}")
    return sorted(out)


LIBRARY = Library(dist="diffprivlib", root="diffprivlib", takes="a diffprivlib mechanism, tool or estimator",
                  adapt=diffprivlib, from_target=_from_target, modules=("diffprivlib",), takes_any_name=True, api=api)
