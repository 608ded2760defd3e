"""Tasks, summaries and the seed derivation that makes runs order- and job-independent.

Every task has a stable, human-readable identity ``Task.key`` (``mechanism=Duff|epsilon=0.5|dataset=17``).
Its random stream is ``SeedSequence(root_seed, spawn_key=(stable_hash(key),))``: a child of the root
seed keyed by the task's *name*, not by its position, so results are bit-identical for any number of
jobs, any backend, and when the config is reordered or extended (numpy's parallel-RNG guide; the
benchopt convention). Data shared between tasks (dataset i, used by every mechanism and epsilon)
comes from :func:`data_rng`, a stream keyed by the data identity alone.
"""

from __future__ import annotations

import hashlib
import math
import numbers
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # an annotation only: checking a config loads no pandas
    import pandas as pd

__all__ = ["Task", "Summary", "stable_hash", "format_value", "make_key", "task_seed", "task_rng", "data_rng"]


@dataclass(frozen=True)
class Task:
    """One unit of work: a stable identity ``key`` and the JSON-able ``params`` the kind needs.

    ``params`` should hold plain scalars (str, int, float, bool); they become ``p_<name>`` columns
    of ``results.csv`` unless the kind already reports them itself.
    """

    key: str
    params: dict[str, Any] = field(default_factory=dict)

    def __hash__(self) -> int:  # params is a dict; identity is the key
        return hash(self.key)


@dataclass(frozen=True)
class Summary:
    """What a kind's ``summarize`` returns: the table (table.csv / table.md), text for the
    terminal, and ``ok`` (False when reference values are out of tolerance)."""

    table: pd.DataFrame
    text: str
    ok: bool = True


def stable_hash(text: str) -> int:
    """First 8 bytes of SHA-256 of ``text`` (UTF-8) as an unsigned int.

    Never Python's ``hash()``: that is salted per process (PYTHONHASHSEED), so it would give
    different streams in different workers.
    """
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big")


def format_value(v: Any) -> str:
    """Canonical text of a key component: ``1``, ``1.0`` and ``1.0e0`` all give ``"1"``;
    other floats use the shortest round-trip repr, so ``0.5`` is ``"0.5"``."""
    t = type(v)
    if t is str:  # fast paths: a sweep of 10^5 tasks formats ~10^6 components
        return v
    if t is int and -(2**53) < v < 2**53:
        return str(v)
    if isinstance(v, bool) or v is None:
        return str(v)
    if isinstance(v, numbers.Real):
        f = float(v)
        if math.isfinite(f) and f.is_integer() and abs(f) < 2**53:
            return str(int(f))
        return repr(f)
    return str(v)


_ESCAPE = str.maketrans({"\\": "\\\\", "|": "\\|", "=": "\\="})


def make_key(**parts: Any) -> str:
    """``make_key(mechanism="Duff", epsilon=0.5, dataset=17)`` -> ``mechanism=Duff|epsilon=0.5|dataset=17``.

    Parts are kept in the order given; ``|`` and ``=`` inside values are escaped so keys parse back.
    """
    out = []
    for k, v in parts.items():
        s = format_value(v)
        if "\\" in s or "|" in s or "=" in s:
            s = s.translate(_ESCAPE)
        out.append(f"{k}={s}")
    return "|".join(out)


def task_seed(root_seed: int, key: str) -> np.random.SeedSequence:
    """The task's seed sequence: ``SeedSequence(root_seed, spawn_key=(stable_hash(key),))``."""
    return np.random.SeedSequence(int(root_seed), spawn_key=(stable_hash(key),))


def task_rng(root_seed: int, key: str) -> np.random.Generator:
    """A fresh PCG64 Generator on the task's stream."""
    return np.random.default_rng(task_seed(root_seed, key))


def data_rng(root_seed: int, data_key: str) -> np.random.Generator:
    """A Generator keyed by the data identity only (e.g. ``normal(loc=0,scale=1)|n=1000|dataset=17``).

    Every task that uses dataset 17 regenerates the very same array from this stream, whatever the
    mechanism, epsilon, order or worker. The ``data|`` prefix keeps these streams apart from task
    streams even if a data key happened to equal a task key.
    """
    return np.random.default_rng(task_seed(root_seed, "data|" + data_key))
