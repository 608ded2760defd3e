"""What the pair generators learn from a mechanism: whether it accepts a dataset, its example
data, sensitivity and epsilon, declared input domain, query-vector lengths and record bounds."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dpharness.verifiers.input_domains import Interval
from dpharness.verifiers.relations.records import is_frame

__all__ = ["accepts", "example_data", "unit", "domain_of", "lengths", "bounds", "admits_missing", "answers_each_query"]


def accepts(mechanism: Any, data: Any, failures: list | None = None, label: str = "") -> bool:
    """Whether the mechanism takes ``data``: ValueError/TypeError/IndexError mean "not a dataset it
    accepts" (dropped silently); any other exception is a failure on a generated input, dropped
    and recorded in ``failures`` (reported by the search)."""
    try:
        mechanism.sample(data, size=1, rng=0)
    except (ValueError, TypeError, IndexError):
        return False
    except Exception as exc:  # the mechanism is user code and may raise anything: record it, or re-raise
        if failures is None:
            raise
        failures.append({"pair": label, "error": f"{type(exc).__name__}: {exc}"[:300]})
        return False
    return True


def example_data(mechanism: Any) -> Any:
    """The data of the mechanism's ``example()``, or None."""
    ex = getattr(type(mechanism), "example", None)
    if ex is None:
        return None
    try:
        _, data = ex()
    except Exception:  # an example is a convenience of user code, which may raise anything: none then
        return None
    return data


def unit(mechanism: Any) -> tuple[float, float]:
    """(sensitivity, default 1; epsilon) of the mechanism's claim."""
    claim = mechanism.claim
    sens = 1.0 if claim.sensitivity is None else float(claim.sensitivity)
    return sens, float(claim.epsilon)


def domain_of(mechanism: Any) -> Any:
    """The mechanism's declared input domain (attribute, else its claim's), or None."""
    dom = getattr(mechanism, "input_domain", None)
    return dom if dom is not None else getattr(mechanism.claim, "input_domain", None)


def lengths(mechanism: Any, preferred: tuple[int, ...]) -> list[int]:
    """Query-vector lengths to generate: the declared ``length`` attribute, else the preferred
    lengths the mechanism accepts, else the first other lengths it accepts (a black box built for
    DP-Sniper's 10 queries takes nothing else)."""
    length = getattr(mechanism, "length", None)
    if length is not None:
        return [int(length)]
    ok = [k for k in preferred if accepts(mechanism, np.zeros(k), [])]
    if ok:
        return ok
    return [k for k in (1, 2, 3, 4, 5, 10, 20, 50, 100) if accepts(mechanism, np.zeros(k), [])][:2]


def _draws_on_zeros(mechanism: Any, k: int, size: int) -> np.ndarray | None:
    """``size`` draws of the mechanism on ``k`` zeros (seed 0), or None when it raises."""
    try:
        return np.asarray(mechanism.sample(np.zeros(k), size=size, rng=0))
    except Exception:  # user code may raise anything: then nothing is known of its release
        return None


def answers_each_query(mechanism: Any, k: int) -> bool:
    """Whether the mechanism releases a row with one or more coordinates per query of a length-``k``
    query vector (sparse vector, histograms, prefix sums), as opposed to a selection (an index or
    the winner's value): two draws on ``k`` zeros, rows of ``k`` or a multiple of ``k`` coordinates."""
    y = _draws_on_zeros(mechanism, k, 2)
    if y is None or y.ndim < 2 or y.shape[0] != 2 or k < 2:
        return False
    width = int(np.prod(y.shape[1:]))
    return width >= k and width % k == 0


def releases_a_value(mechanism: Any, k: int) -> bool:
    """Whether a selection over ``k`` queries releases the winner's noisy *value* (a real scalar)
    rather than its index: eight draws on ``k`` zeros, one coordinate each, some not an integer."""
    y = _draws_on_zeros(mechanism, k, 8)
    if y is None or y.ndim < 1 or y.shape[0] != 8 or int(np.prod(y.shape[1:])) != 1 or y.dtype.kind not in "biuf":
        return False
    y = y.astype(np.float64).reshape(-1)
    return bool(np.all(np.isfinite(y)) and np.any(y != np.round(y)))


def bounds(mechanism: Any) -> tuple[float, float]:
    """Scalar record bounds: the declared ``lower``/``upper``, else an interval input domain, else
    the example data's range, else [0, 1]."""
    lo, hi = getattr(mechanism, "lower", None), getattr(mechanism, "upper", None)
    if (lo is not None and hi is not None and np.ndim(lo) == 0 and np.ndim(hi) == 0
            and math.isfinite(float(lo)) and math.isfinite(float(hi))):
        return float(lo), float(hi)
    dom = domain_of(mechanism)
    if isinstance(dom, Interval):
        return dom.lo, dom.hi
    ex = example_data(mechanism)
    if ex is not None and not is_frame(ex):
        a = np.asarray(ex)
        if a.ndim == 1 and a.size and np.issubdtype(a.dtype, np.number):
            lo_, hi_ = float(np.min(a)), float(np.max(a))
            return (lo_, hi_) if hi_ > lo_ else (lo_ - 1.0, lo_ + 1.0)
    return 0.0, 1.0


def admits_missing(mechanism: Any) -> bool:
    """Whether records may be missing (float NaN): the mechanism declares ``missing_values=True``
    (e.g. diffprivlib's ``nan*`` tools, whose claim covers data with NaNs they ignore), or its
    declared input domain holds NaN. Undeclared, a NaN is not a record of the domain: a mean that
    turns NaN on a NaN record is not a privacy leak of the mechanism its author described."""
    if getattr(mechanism, "missing_values", False):
        return True
    dom = domain_of(mechanism)
    if dom is None:
        return False
    try:
        return bool(dom.contains(float("nan")))
    except (TypeError, ValueError):  # a domain of rows or of other types: no scalar NaN record
        return False
