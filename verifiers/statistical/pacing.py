"""Batch sizes of the anytime-valid audit: the fixed schedule, the adaptive next batch, and the
predicted growth of ln M at the claim that sizes it (:mod:`verifiers.statistical.sequential`)."""

from __future__ import annotations

import importlib
import math
from typing import Any

import numpy as np

__all__ = ["schedule", "next_batch", "pace", "kl"]


def _tuning() -> Any:
    """:mod:`verifiers.statistical.sequential`, whose constants are read when a function runs (so
    setting e.g. ``sequential.BROAD`` changes later audits); imported here, not at the top, because
    that module imports this one."""
    return importlib.import_module("dpharness.verifiers.statistical.sequential")


def schedule(budget: int, first_cert: int | None = None, growth: float | None = None) -> list[int]:
    """Fixed batch sizes per dataset: first_cert, x growth, ..., the last one cut to the budget
    (the audit itself sizes its batches with :func:`next_batch`)."""
    t = _tuning()
    first_cert = t.FIRST_CERT if first_cert is None else first_cert
    growth = t.GROWTH if growth is None else growth
    out: list[int] = []
    left = int(budget)
    size = float(max(1, first_cert))
    while left > 0:
        n = min(left, max(1, int(round(size))))
        out.append(n)
        left -= n
        size *= growth
    return out


def next_batch(prev: int, left: int, log_m: float, rate: float, threshold: float, seen: int = 0,
               progress: float = math.inf, first_cert: int | None = None, growth: float | None = None,
               budget: int | None = None) -> int:
    """Size of the next batch, from the past only: ``prev`` (the last batch, 0 before the first),
    ``left`` (budget still unused), ``log_m`` (ln M at the claim now), ``rate`` (predicted growth
    of ln M at the claim per draw per dataset of the event about to be used; <= 0: none),
    ``seen`` (draws per dataset so far, selection included), ``progress`` (growth of ln M at the
    claim since the look at WINDOW x ``seen`` draws).

    With h = (ln(1/alpha) - ln M)/rate the predicted draws still needed, a violation is "near"
    when h <= min(left, HORIZON x seen) and ln M has not fallen lately (progress > STALL: the
    prediction alone is optimistic, the event was picked for its counts, and on a correct mechanism
    ln M drifts down).
    Near: max(MIN_BATCH, min(GROWTH x prev, FINE x h)), finer as M at the claim nears 1/alpha, so a
    stop overshoots the crossing by about FINE of the draws it needed. Otherwise (e.g. a correct
    mechanism) the batches grow by g = (budget/FIRST_CERT)^(1/FAST_LOOKS), within [FAST_MIN,
    FAST_GROWTH] (``budget``: the certification budget; FAST_GROWTH without it), so the budget is
    reached in about FAST_LOOKS looks (O(log budget) when g is capped).
    """
    t = _tuning()
    first_cert = t.FIRST_CERT if first_cert is None else first_cert
    growth = t.GROWTH if growth is None else growth
    gap = max(threshold - log_m, 0.0)
    if prev <= 0:
        n = first_cert
    elif rate > 0 and gap <= rate * min(left, t.HORIZON * max(seen, 1)) and progress > t.STALL:
        n = max(t.MIN_BATCH, min(int(math.ceil(prev * growth)), int(round(t.FINE * gap / rate))))
    else:
        g = t.FAST_GROWTH
        if budget is not None:
            g = min(t.FAST_GROWTH, max(t.FAST_MIN, (max(budget, 1) / max(first_cert, 1)) ** (1.0 / t.FAST_LOOKS)))
        n = int(math.ceil(prev * g))
    return int(max(1, min(n, left)))


def kl(p: np.ndarray, q: float) -> np.ndarray:
    """KL(Bern(p) || Bern(q)) elementwise (0 log 0 = 0)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.where(p > 0, p * np.log(p / q), 0.0)
        b = np.where(p < 1, (1 - p) * np.log((1 - p) / (1 - q)), 0.0)
    return a + b


def pace(kn: float, kd: float, rows: float, delta: float, pi_c: float) -> float:
    """Growth of ln M at the claim per draw per dataset that an event seen kn/kd times in ``rows``
    draws per dataset would give if those frequencies were the truth (what sizes the batches);
    inf before any draw."""
    if rows <= 0:
        return math.inf
    pn, pd = max(kn / rows - delta, 0.0), kd / rows
    if pn + pd <= 0:
        return 0.0
    pi = pn / (pn + pd)
    return float((pn + pd) * kl(np.array([pi]), pi_c)[0]) if pi > pi_c else 0.0
