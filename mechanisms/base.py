"""The mechanism contract: privacy claims, input validation and the shared helpers.

(The contract as typing Protocols, for type hints and the verifier: :mod:`mechanisms.contracts`.)

Every mechanism in dpharness is a small frozen dataclass with

* ``claim`` -- a :class:`PrivacyClaim` (epsilon, delta, neighbour relation);
* ``sample(data, size=None, rng=None) -> np.ndarray`` -- draws with the sample axis first;
  ``rng`` is a :class:`numpy.random.Generator`, a seed or ``None`` and is normalised with
  :func:`numpy.random.default_rng`; it is never stored on the object;
* for finite output sets, ``support(data)`` and ``log_prob(data)`` (exact log-probabilities aligned
  with the support);
* for continuous outputs, ``distribution(data)`` returning one of the exact laws of
  :mod:`mechanisms.laws`.

This is a research and auditing harness: randomness comes from numpy's seedable PRNG and floating
point, which is what reproducibility needs and what a production release library must avoid.
"""

from __future__ import annotations

import difflib
import math
import numbers
from dataclasses import dataclass, fields
from typing import Any, ClassVar, Sequence

import numpy as np

__all__ = [
    "NEIGHBOURS",
    "neighbour_relations",
    "register_neighbours",
    "ParamError",
    "PrivacyClaim",
    "Mechanism",
    "as_rng",
    "check_epsilon",
    "check_delta",
    "check_positive",
    "check_bounds",
    "check_data",
    "check_scores",
    "check_choice",
    "check_size",
    "check_present",
    "MAX_DRAWS",
]

#: Neighbour relations a claim may refer to.
#:
#: ``add_remove``   datasets differ by adding or removing one record (unbounded DP);
#: ``replace_one``  datasets of equal size differ in one record (bounded DP);
#: ``score_linf``   the data *is* a score/utility vector and each score moves by at most the
#:                  declared sensitivity (in either direction, independently);
#: ``score_monotone`` as ``score_linf`` but all scores move in the same direction (counting
#:                  queries under add/remove);
#: ``value``        the data is a scalar query answer f(D) that moves by at most the sensitivity;
#: ``bit``          the data is one private bit that may flip (randomized response);
#: ``one_differ``   the data is a query-answer vector (e.g. a histogram); neighbours have the same
#:                  shape and exactly one coordinate moves, by at most the sensitivity (default 1);
#: ``privacy_unit`` records carry a privacy-unit id (user-level DP); neighbours differ by adding or
#:                  removing *all* records of one unit, which holds at most ``max_contributions``
#:                  records (declared on the mechanism; docs/auditing.md, "Neighbour relations").
#: ``local``        local DP: the data is one individual's value and *any* two values of the
#:                  declared ``input_domain`` are neighbours (randomized response over categories,
#:                  bit vectors, a real interval; docs/auditing.md, "Records as rows, local DP and
#:                  input domains").
NEIGHBOURS: tuple[str, ...] = (
    "add_remove",
    "replace_one",
    "score_linf",
    "score_monotone",
    "value",
    "bit",
    "one_differ",
    "privacy_unit",
    "local",
)

#: Relations registered beyond :data:`NEIGHBOURS` (:mod:`dpharness.verifiers.relations` adds each
#: relation module's name here, so that a claim may name a relation added as one new module).
_REGISTERED: list[str] = []


def register_neighbours(name: str) -> None:
    """Let claims name the neighbour relation ``name`` (a no-op for the built-in ones)."""
    if name not in NEIGHBOURS and name not in _REGISTERED:
        _REGISTERED.append(name)


def neighbour_relations() -> tuple[str, ...]:
    """Every relation a claim may name: :data:`NEIGHBOURS`, then the ones registered since."""
    return NEIGHBOURS + tuple(_REGISTERED)


class ParamError(ValueError):
    """A refused parameter or argument value; ``field`` is the name of the parameter it concerns.

    A ``ValueError`` with the same message as before, so code that catches ``ValueError`` is
    unchanged; callers that report mistakes by field (config validation, ``dpharness audit``)
    read ``field`` instead of parsing the message. The message starts with the name
    (``"epsilon must be a finite number > 0, got 0"``).
    """

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field

    @property
    def detail(self) -> str:
        """The message without the parameter's name in front (``must be a finite number > 0, got 0``):
        what a config error shows after the field's path."""
        msg = str(self)
        return msg[len(self.field) + 1:] if msg.startswith(self.field + " ") else msg

    def __reduce__(self) -> tuple[Any, ...]:
        # pickled across processes (task errors of worker pools) with both arguments
        return type(self), (self.field, str(self))


def _is_real(x: Any) -> bool:
    return isinstance(x, numbers.Real) and not isinstance(x, bool)


def check_epsilon(epsilon: Any, name: str = "epsilon") -> float:
    """Return ``epsilon`` as a float, or raise ``ValueError`` unless it is finite and > 0."""
    if not _is_real(epsilon) or not math.isfinite(float(epsilon)) or float(epsilon) <= 0:
        raise ParamError(name, f"{name} must be a finite number > 0, got {epsilon!r}")
    return float(epsilon)


def check_delta(delta: Any, name: str = "delta", *, allow_zero: bool = True) -> float:
    """Return ``delta`` as a float in [0, 1) (or (0, 1) when ``allow_zero`` is False)."""
    ok = _is_real(delta) and math.isfinite(float(delta)) and 0 <= float(delta) < 1
    if ok and not allow_zero and float(delta) == 0:
        ok = False
    if not ok:
        rng_txt = "[0, 1)" if allow_zero else "(0, 1)"
        raise ParamError(name, f"{name} must be in {rng_txt}, got {delta!r}")
    return float(delta)


def check_positive(x: Any, name: str) -> float:
    """Return ``x`` as a float, or raise ``ValueError`` unless it is finite and > 0."""
    if not _is_real(x) or not math.isfinite(float(x)) or float(x) <= 0:
        raise ParamError(name, f"{name} must be a finite number > 0, got {x!r}")
    return float(x)


def check_bounds(lower: Any, upper: Any, names: tuple[str, str] = ("lower", "upper")) -> tuple[float, float]:
    """Return ``(lower, upper)`` as floats, or raise unless both are finite and lower < upper."""
    for v, nm in ((lower, names[0]), (upper, names[1])):
        if not _is_real(v) or not math.isfinite(float(v)):
            raise ParamError(nm, f"{nm} must be a finite number, got {v!r}")
    if float(lower) >= float(upper):
        raise ParamError(names[0], f"{names[0]} must be < {names[1]}, got {names[0]}={lower!r}, {names[1]}={upper!r}")
    return float(lower), float(upper)


def check_choice(value: Any, name: str, accepted: tuple[Any, ...]) -> Any:
    """Raise ``ValueError`` naming the accepted values unless ``value`` is one of them."""
    if value not in accepted:
        raise ParamError(name, f"{name} must be one of {', '.join(map(repr, accepted))}; got {value!r}")
    return value


def did_you_mean(word: Any, options: Sequence[Any]) -> str:
    """`` (did you mean 'x'?)`` for the closest of ``options`` to a misspelt ``word``, else ``""``."""
    by_lower = {str(o).lower(): str(o) for o in options}  # case slips first (Age for age)
    close = difflib.get_close_matches(str(word).lower(), list(by_lower), n=1, cutoff=0.6)
    return f" (did you mean {by_lower[close[0]]!r}?)" if close else ""


def check_present(data: Any, name: str = "data", what: str = "a 1-D array of real numbers") -> None:
    """Raise ``ValueError`` saying that ``name`` is missing when it is None (numpy would read None
    as NaN and report "found nan", which hides the real mistake)."""
    if data is None:
        raise ParamError(name, f"{name} is missing (got None); pass {what}")


def check_data(data: Any, name: str = "data", *, allow_empty: bool = False) -> np.ndarray:
    """Return a 1-D float64 array; raise ``ValueError`` on None, NaN/inf, wrong shape or emptiness."""
    check_present(data, name)
    try:
        x = np.asarray(data, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ParamError(name, f"{name} must be a 1-D array of real numbers: {exc}") from None
    if x.ndim == 0:
        x = x.reshape(1)
    if x.ndim != 1:
        raise ParamError(name, f"{name} must be 1-D, got shape {x.shape}")
    if x.size == 0 and not allow_empty:
        raise ParamError(name, f"{name} must not be empty")
    if not np.all(np.isfinite(x)):
        bad = x[~np.isfinite(x)][0]
        raise ParamError(name, f"{name} must be finite; found {bad!r} at index {int(np.flatnonzero(~np.isfinite(x))[0])}")
    return x


def check_scores(scores: Any, name: str = "scores") -> np.ndarray:
    """Score vectors: 1-D, non-empty; -inf allowed (never selected), +inf and NaN rejected.

    At least one score must be finite, otherwise no candidate can be selected.
    """
    check_present(scores, name, "a 1-D array of scores, one per candidate")
    try:
        u = np.asarray(scores, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ParamError(name, f"{name} must be a 1-D array of real numbers: {exc}") from None
    if u.ndim != 1:
        raise ParamError(name, f"{name} must be 1-D, got shape {u.shape}")
    if u.size == 0:
        raise ParamError(name, f"{name} must not be empty (no candidates)")
    if np.isnan(u).any():
        raise ParamError(name, f"{name} must not contain NaN (index {int(np.flatnonzero(np.isnan(u))[0])})")
    if np.isposinf(u).any():
        raise ParamError(name, f"{name} must not contain +inf (index {int(np.flatnonzero(np.isposinf(u))[0])})")
    if np.isneginf(u).all():
        raise ParamError(name, f"{name}: every score is -inf, no candidate can be selected")
    return u


#: Most draws one ``sample`` call may return: 2^28 (about 2.7e8; 2 GiB per float64 output array,
#: and samplers hold a few such arrays). Larger requests are refused by :func:`check_size` before
#: anything is allocated, with the memory they would need; draw in batches instead.
MAX_DRAWS = 2**28
#: Bytes per draw of the output array alone (float64 or int64), for the message of check_size.
_OUTPUT_BYTES = 8


def _fmt_bytes(b: float) -> str:
    for unit, v in (("EiB", 2**60), ("PiB", 2**50), ("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20)):
        if b >= v:
            return f"{b / v:.3g} {unit}"
    return f"{b:.0f} bytes"


def check_size(size: Any) -> tuple[int, ...]:
    """Normalise numpy's ``size`` argument to a shape tuple; ``None`` means one draw, shape ().

    At most :data:`MAX_DRAWS` draws per call: a larger ``size`` raises ``ValueError`` stating the
    memory its output alone would need, instead of numpy's ``MemoryError`` half-way through.
    """
    if size is None:
        return ()
    if isinstance(size, (numbers.Integral, np.integer)) and not isinstance(size, bool):
        shape: tuple[Any, ...] = (size,)
    else:
        try:
            shape = tuple(size)
        except TypeError:
            raise ParamError("size", f"size must be None, an int >= 0 or a tuple of them, got {size!r}") from None
    for s in shape:
        if not isinstance(s, (numbers.Integral, np.integer)) or isinstance(s, bool) or s < 0:
            raise ParamError("size", f"size must be None, an int >= 0 or a tuple of them, got {size!r}")
    out = tuple(int(s) for s in shape)
    n = math.prod(out)
    if n > MAX_DRAWS:
        raise ParamError(
            "size",
            f"size={size!r} asks for {n:,} draws in one call; the output alone would need "
            f"{_fmt_bytes(float(n) * _OUTPUT_BYTES)} of memory. At most {MAX_DRAWS:,} draws (2**28) per call "
            "are allowed: draw in batches"
        )
    return out


_RNG_ACCEPTED = "None, a non-negative int seed, a numpy SeedSequence, BitGenerator or Generator"


def as_rng(rng: Any = None) -> np.random.Generator:
    """Normalise ``rng`` to a :class:`numpy.random.Generator` (:func:`numpy.random.default_rng`).

    Accepts None (fresh OS entropy), a non-negative int seed (or a sequence of them), a
    SeedSequence, a BitGenerator or a Generator (returned as is). Anything else raises
    ``ValueError`` naming ``rng`` and what it accepts.
    """
    if isinstance(rng, bool) or (isinstance(rng, (numbers.Integral, np.integer)) and rng < 0):
        raise ParamError("rng", f"rng must be {_RNG_ACCEPTED}; got {rng!r}")
    try:
        return np.random.default_rng(rng)
    except (TypeError, ValueError):
        raise ParamError("rng", f"rng must be {_RNG_ACCEPTED}; got {rng!r}") from None


@dataclass(frozen=True)
class PrivacyClaim:
    """What a mechanism promises: (epsilon, delta)-DP under a neighbour relation.

    ``neighbours`` is one of :data:`NEIGHBOURS` (or a relation registered since:
    :func:`neighbour_relations`). ``sensitivity`` records the sensitivity the
    calibration assumed (of the utility or query), for reports; it is part of the claim because
    the same noise is epsilon-DP for one sensitivity and not for a larger one.
    """

    epsilon: float
    delta: float = 0.0
    neighbours: str = "add_remove"
    sensitivity: float | None = None
    #: ``privacy_unit`` only: the column holding the unit id (an index into each record, or a
    #: DataFrame column name) and the most records one unit may hold.
    unit_column: int | str | None = None
    max_contributions: int | None = None
    #: The set the inputs range over (``dpharness.verifiers.input_domains``: FiniteValues,
    #: BitVectors, Interval; any hashable object with ``contains(x)``). Under ``local`` any two of
    #: its elements are neighbours; under the record relations every record, under the others the
    #: whole input, must lie in it. None: unrestricted.
    input_domain: Any = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        object.__setattr__(self, "delta", check_delta(self.delta))
        check_choice(self.neighbours, "neighbours", neighbour_relations())
        if self.neighbours == "privacy_unit":
            mc = self.max_contributions
            if isinstance(mc, bool) or not isinstance(mc, (numbers.Integral, np.integer)) or int(mc) < 1:
                raise ValueError("privacy_unit neighbours need max_contributions, a positive integer (the most "
                                 f"records one privacy unit may hold), got {mc!r}")
            object.__setattr__(self, "max_contributions", int(mc))
            uc = 0 if self.unit_column is None else self.unit_column
            if isinstance(uc, bool) or not isinstance(uc, (numbers.Integral, np.integer, str)):
                raise ParamError("unit_column", f"unit_column must be a column index or a column name, got {uc!r}")
            object.__setattr__(self, "unit_column", uc if isinstance(uc, str) else int(uc))
        elif self.unit_column is not None or self.max_contributions is not None:
            raise ParamError("unit_column", f"unit_column and max_contributions belong to privacy_unit neighbours, "
                             f"not {self.neighbours!r}")
        if self.sensitivity is not None:
            object.__setattr__(self, "sensitivity", check_positive(self.sensitivity, "sensitivity"))
        dom = self.input_domain
        if dom is not None and not callable(getattr(dom, "contains", None)):
            raise TypeError("input_domain must be an input domain with a contains(x) method (FiniteValues, "
                            "BitVectors or Interval from dpharness.verifiers.input_domains; verifiers.wrap also "
                            f"accepts a list of values, {{'bits': n}} or {{'interval': [lo, hi]}}), got {dom!r}")

    @property
    def pure(self) -> bool:
        return self.delta == 0.0

    def __str__(self) -> str:
        if self.delta == 0:
            head = f"epsilon={self.epsilon:g} (pure DP)"
        else:
            head = f"(epsilon={self.epsilon:g}, delta={self.delta:g})-DP"
        s = "" if self.sensitivity is None else f", sensitivity={self.sensitivity:g}"
        if self.neighbours == "privacy_unit":
            s += f", unit column {self.unit_column!r}, max_contributions={self.max_contributions}"
        if self.input_domain is not None:
            s += f", input domain {self.input_domain}"
        return f"{head}, {self.neighbours} neighbours{s}"


class Mechanism:
    """Mixin for mechanism dataclasses (use with ``@dataclass(frozen=True)``).

    Subclasses set ``name`` (via :func:`mechanisms.registry.register`), ``kind`` ("finite",
    "real") and implement ``claim``, ``sample`` and ``example``.
    """

    name: ClassVar[str] = ""
    #: "finite" (support/log_prob) or "real" (real-valued outputs, maybe with distribution()).
    kind: ClassVar[str] = "real"

    @property
    def claim(self) -> PrivacyClaim:  # pragma: no cover - abstract
        raise NotImplementedError

    def sample(self, data: Any, size: Any = None, rng: Any = None) -> np.ndarray:  # pragma: no cover
        raise NotImplementedError

    @classmethod
    def example(cls) -> tuple["Mechanism", Any]:  # pragma: no cover - abstract
        """A small valid (mechanism, data) pair: used by ``dpharness list``, contract tests, audits."""
        raise NotImplementedError

    def params(self) -> dict[str, Any]:
        """The constructor parameters of this instance (what ``make`` would need to rebuild it)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}  # type: ignore[arg-type]
