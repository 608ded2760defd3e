"""Seeds and draws of an audit: keyed Generators per role, and draws of a mechanism checked for
shape and type (the layer :mod:`verifiers.statistical.batch` and :mod:`verifiers.statistical.parallel` share)."""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from dpharness.mechanisms.base import ParamError
from dpharness.mechanisms.contracts import is_finite as _declares_finite

__all__ = ["seed_of", "stream", "draw", "as_labels", "label_text", "none_as_nan", "count_draws", "is_finite", "SELECT", "CERTIFY", "CHUNK_BYTES",
           "FIRST_CHUNK"]


def seed_of(rng: Any) -> int:
    """An integer seed that reproduces this audit: ints are kept, Generators give one draw,
    ``None`` gives fresh OS entropy, a SeedSequence its entropy (when it has no spawn key)."""
    if rng is None:
        return int(np.random.SeedSequence().entropy)  # type: ignore[arg-type]
    if isinstance(rng, (numbers.Integral, np.integer)) and not isinstance(rng, bool):
        if int(rng) < 0:
            raise ParamError("rng", f"rng must be a non-negative seed, a Generator or None, got {rng!r}")
        return int(rng)
    if isinstance(rng, np.random.Generator):
        return int(rng.integers(0, 2**63 - 1))
    if isinstance(rng, np.random.SeedSequence) and not rng.spawn_key:
        return int(rng.entropy)  # type: ignore[arg-type]
    if isinstance(rng, np.random.SeedSequence):
        return int(rng.generate_state(2, np.uint64).astype(object).dot([1, 2**64]))
    raise ParamError("rng", f"rng must be None, a non-negative int, a SeedSequence or a numpy Generator, got {rng!r}")


def stream(seed: int, *key: int) -> np.random.Generator:
    """The Generator for one role of an audit (e.g. (pair, phase, side)), keyed, not positional."""
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=tuple(int(k) for k in key)))


SELECT, CERTIFY = 0, 1


#: Largest block of outputs held in memory at once while counting certification draws (bytes);
#: e.g. 10^7 draws of a 20-coordinate float output are counted in blocks of ~400,000 rows.
CHUNK_BYTES = 64 * 2**20
#: Rows of the first block, which tells the row width (later blocks are sized from it).
FIRST_CHUNK = 4096


def draw(mechanism: Any, data: Any, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` outputs of ``mechanism`` on ``data``, sample axis first: shape ``(n,)`` for scalar
    outputs, ``(n, d)`` for structured ones (an output of shape ``(d1, d2, ...)`` is flattened
    to one row of ``d = d1 * d2 * ...`` coordinates; each row is one draw).

    NaN and +-inf are legal outputs, scalar or in rows: NaN is one atom ("no answer", e.g. sparse
    vector's bottom, or a release that failed on one dataset only), so a release that is NaN under
    one dataset and a number under the other is a support violation, not an error."""
    raw = mechanism.sample(data, size=n, rng=rng)
    finite = is_finite(mechanism)
    out = as_labels(raw) if finite else none_as_nan(np.asarray(raw))
    if out.ndim == 0 or out.shape[0] != n:
        raise ValueError(
            f"mechanism.sample(data, size={n}) must return {n} outputs with the sample axis first "
            f"(shape ({n},) or ({n}, ...)), got shape {out.shape}")
    if out.ndim >= 2:
        width = int(np.prod(out.shape[1:]))
        out = out.reshape(n) if width == 1 else out.reshape(n, width)
    if finite and out.dtype == object and out.ndim == 1:  # outputs as Python objects: one label per draw
        out = _label_strings(out)
    if not finite and out.dtype.kind not in "biuf":
        first = out.reshape(-1)[0] if out.size else None
        raise TypeError(
            f"mechanism.sample returned {out.dtype} outputs (first: {first!r}); a real-valued mechanism "
            "(kind='real') must return numbers. Outputs from a finite set of labels need kind='finite' "
            "(e.g. verifiers.wrap(fn, ..., kind='finite'))")
    return out


def as_labels(raw: Any) -> np.ndarray:
    """The outputs of a finite mechanism as an array, sample axis first.

    A Python list (or tuple) whose draws are lists or tuples (a sparse vector's answers up to its
    c-th "above", of any length) is one label per draw, whatever their lengths in this batch: a
    rule that looked at the lengths would give one output two labels in two batches. Numpy arrays
    keep their rows (label rows, e.g. RAPPOR's bits)."""
    if isinstance(raw, (list, tuple)) and any(isinstance(x, (list, tuple)) for x in raw):
        out = np.empty(len(raw), dtype=object)
        for i, x in enumerate(raw):
            out[i] = x
        return out
    try:
        return np.asarray(raw)
    except ValueError:  # arrays of different lengths in a list: no rule above applies
        raise TypeError("a finite mechanism returned arrays of different lengths; return each draw as a Python "
                        "list or tuple (one label per draw) or pad them to one length (label rows)") from None


def none_as_nan(out: np.ndarray) -> np.ndarray:
    """Real outputs written as Python numbers with ``None`` for "no answer" (a sparse vector's
    bottom, in plain Python): floats, ``None`` as NaN, the atom NaN already is. Any other object
    array is returned as it is (and rejected by the caller)."""
    if out.dtype != object:
        return out
    items = out.reshape(-1).tolist()
    if not all(x is None or (isinstance(x, numbers.Real) and not isinstance(x, str)) for x in items):
        return out
    return np.array([np.nan if x is None else float(x) for x in items], dtype=np.float64).reshape(out.shape)


def _canonical(x: Any) -> Any:
    """A hashable value equal for equal outputs: sequences as tuples, numpy scalars as Python's."""
    if isinstance(x, (list, tuple, np.ndarray)):
        return tuple(_canonical(v) for v in (x.tolist() if isinstance(x, np.ndarray) else x))
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, dict):
        return tuple(sorted(((repr(k), _canonical(v)) for k, v in x.items())))
    return x


def _label_strings(out: np.ndarray) -> np.ndarray:
    """Finite outputs held as Python objects, one label per draw, by a fixed map (so selection and
    certification draws get the same labels whatever a batch holds):

    * numbers beside ``None``: floats, ``None`` read as NaN, the "no answer" atom of real outputs
      (a batch without ``None`` is a numeric array with the same values);
    * anything else (lists, tuples, mixed types): its ``repr``, sequences as tuples; a string keeps
      its text. Strings sort, which ``None`` beside numbers does not. Outputs with one repr (the
      int 1 and the string "1") are one label: coarser events, never wrong counts."""
    num = none_as_nan(out)
    return num if num.dtype != object else label_text(out)


def label_text(y: np.ndarray) -> np.ndarray:
    """Draws as the strings :func:`draw` gives labels it reads as text (a numeric batch compared
    with labels chosen on a batch that held text)."""
    y = np.asarray(y)
    if y.dtype.kind == "U":
        return y
    return np.array([x if isinstance(x, str) else repr(_canonical(x)) for x in y.tolist()], dtype=str)


def count_draws(mechanism: Any, data: Any, n: int, rng: np.random.Generator, event: Any,
                chunk_bytes: int | None = None) -> int:
    """Number of ``n`` fresh draws that fall in ``event``, drawn in blocks of bounded memory.

    The blocks are taken one after the other from the same Generator, so for a mechanism whose
    draws are i.i.d. per row of one array (numpy's samplers fill arrays in order) the draws are
    exactly those of one batch; either way the count is exactly Binomial(n, P[event]).
    """
    limit = CHUNK_BYTES if chunk_bytes is None else int(chunk_bytes)
    done, hits = 0, 0
    step = min(n, FIRST_CHUNK)
    while done < n:
        m = min(step, n - done)
        y = draw(mechanism, data, m, rng)
        hits += event.count(y)
        done += m
        row_bytes = max(1, y.itemsize * (int(np.prod(y.shape[1:])) if y.ndim > 1 else 1))
        step = max(1, limit // row_bytes)
    return hits


def is_finite(mechanism: Any) -> bool:
    """True when the mechanism declares finite outputs (:func:`mechanisms.contracts.is_finite`)."""
    return _declares_finite(mechanism)


