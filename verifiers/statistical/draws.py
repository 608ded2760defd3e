"""Seeds and draws of an audit: keyed Generators per role, and draws of a mechanism checked for
shape and type (the layer :mod:`verifiers.statistical.batch` and :mod:`verifiers.statistical.parallel` share)."""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from dpharness.mechanisms.base import ParamError
from dpharness.mechanisms.contracts import is_finite as _declares_finite

__all__ = ["seed_of", "stream", "draw", "count_draws", "is_finite", "SELECT", "CERTIFY", "CHUNK_BYTES",
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
    out = np.asarray(mechanism.sample(data, size=n, rng=rng))
    if out.ndim == 0 or out.shape[0] != n:
        raise ValueError(
            f"mechanism.sample(data, size={n}) must return {n} outputs with the sample axis first "
            f"(shape ({n},) or ({n}, ...)), got shape {out.shape}")
    if out.ndim >= 2:
        width = int(np.prod(out.shape[1:]))
        out = out.reshape(n) if width == 1 else out.reshape(n, width)
    if not is_finite(mechanism) and out.dtype.kind not in "biuf":
        first = out.reshape(-1)[0] if out.size else None
        raise TypeError(
            f"mechanism.sample returned {out.dtype} outputs (first: {first!r}); a real-valued mechanism "
            "(kind='real') must return numbers. Outputs from a finite set of labels need kind='finite' "
            "(e.g. verifiers.wrap(fn, ..., kind='finite'))")
    return out


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


