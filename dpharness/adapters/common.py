"""What every library adapter shares: the one import helper (:func:`require`) and its error
(:class:`MissingLibrary`), the install hint, the default delta, and small helpers for quiet calls,
seeds and data (docs/adapters.md).

The libraries are imported when an adapter is built, never when this module is.
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["INSTALL_HINT", "DEFAULT_DELTA", "MissingLibrary", "require", "import_note", "quiet", "kind_of", "seeds",
           "as_array", "scalar"]

#: How to get the libraries (the ``peers`` extra).
INSTALL_HINT = "pip install 'dpharness[peers]'"

#: delta at which privacy profiles (smoothed max divergence) and zCDP are read, unless given.
DEFAULT_DELTA = 1e-6

#: What to add when a library installed next to an incompatible dependency does not import.
_IMPORT_NOTES = {"diffprivlib": " (diffprivlib 0.6.6 needs scikit-learn<1.9)"}


def import_note(dist: str) -> str:
    """`` (why it may not import)`` for the library ``dist`` when there is a known reason, else ``""``."""
    return _IMPORT_NOTES.get(dist, "")


class MissingLibrary(ImportError):
    """A DP library an adapter needs is not installed (or fails to import); the message says how
    to install it, ``dist`` names the library (its package-index name, e.g. ``python-dp``) and
    ``__cause__`` is the import's own error."""

    def __init__(self, message: str, *, dist: str = "") -> None:
        super().__init__(message)
        self.dist = dist


def require(module: str, dist: str) -> Any:
    """Import ``module`` of the library ``dist`` (its package-index name), its import-time warnings
    silenced; :class:`MissingLibrary` with the install hint if it cannot be imported."""
    try:
        with warnings.catch_warnings():  # libraries warn on import (deprecations); not ours to show
            warnings.simplefilter("ignore")
            return importlib.import_module(module)
    except ImportError as exc:
        raise MissingLibrary(f"{dist} is needed for this adapter but cannot be imported ({exc}){import_note(dist)}; "
                             f"{INSTALL_HINT}", dist=dist) from exc


def quiet(call: Callable[[], Any]) -> Any:
    """``call()`` with the library's warnings silenced (they come per call, and the test suite
    runs with warnings as errors; whether a release leaks is for the audit to find)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return call()


def kind_of(out: Any) -> str:
    """``"real"`` for float outputs, ``"finite"`` for integers, booleans and labels."""
    return "real" if np.asarray(out).dtype.kind in "fc" else "finite"


def seeds(rng: np.random.Generator, n: int) -> list[int]:
    """``n`` integer seeds for a library that takes ``random_state`` (diffprivlib), from our stream."""
    return [int(s) for s in rng.integers(0, 2**31 - 1, size=n)]


def as_array(data: Any) -> np.ndarray:
    """Our data (arrays, lists, DataFrames) as a numpy array."""
    return data.to_numpy() if hasattr(data, "columns") and hasattr(data, "to_numpy") else np.asarray(data)


def scalar(data: Any, what: str) -> Any:
    """The one value of ``data`` (a scalar or any array of size 1); ``ValueError`` naming ``what`` otherwise."""
    a = np.asarray(data)
    if a.size != 1:
        raise ValueError(f"{what} takes one value as data, got shape {a.shape}")
    return a.reshape(-1)[0].item()
