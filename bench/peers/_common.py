"""Small pieces shared by the peer adapters: result types, the install hint, quiet calls, seeds
(the last two, and the error of a missing library, are the adapters' own: :mod:`dpharness.adapters.common`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from dpharness.adapters.common import MissingLibrary, seeds
from dpharness.adapters.common import quiet as quiet_call

__all__ = ["INSTALL_HINT", "PEER_PACKAGES", "PeerImpl", "PeerSampler", "PeerUnavailable", "Skipped", "quiet",
           "seeds"]

#: How to get every peer (the ``peers`` extra of pyproject.toml).
INSTALL_HINT = (
    "install the peers extra: pip install -e '.[peers]' "
    "(diffprivlib, scikit-learn<1.9, opendp, python-dp)"
)

#: distribution name -> import name, for version reports.
PEER_PACKAGES: dict[str, str] = {
    "diffprivlib": "diffprivlib",
    "scikit-learn": "sklearn",
    "opendp": "opendp",
    "python-dp": "pydp",
}

#: ``sample(data, draws, rng) -> np.ndarray``: ``draws`` releases of a peer mechanism on ``data``.
Sample = Callable[[Any, int, np.random.Generator], np.ndarray]


class PeerUnavailable(MissingLibrary, RuntimeError):
    """The peer library is missing or broken; the message says why and how to install it, ``dist``
    names it. A :class:`dpharness.adapters.MissingLibrary` (an ``ImportError``), and a
    ``RuntimeError`` as it always was."""


@dataclass(frozen=True)
class PeerSampler:
    """A peer mechanism built by its adapter, exactly one way for benchmarks and audits alike.

    ``sample(data, draws, rng)`` calls the peer once per release. ``epsilon`` is the privacy
    parameter the peer itself reports for the measurement when it can (OpenDP's ``map``), else
    the one passed in. ``note`` is what a reader of a timing or a verdict must know.
    """

    name: str
    library: str
    sample: Sample = field(repr=False)
    epsilon: float
    note: str = ""


@dataclass(frozen=True)
class PeerImpl:
    """One peer implementation ready to time.

    ``run(data, draws, rng)`` returns ``draws`` releases as an array, calling the peer once per
    release (peers release one value per call). ``note`` says anything the reader of a timing
    must know (input conversion included in the time, unseedable randomness, ...).
    """

    name: str
    library: str
    run: Sample = field(repr=False)
    note: str = ""


@dataclass(frozen=True)
class Skipped:
    """A peer that could not be used, with the reason (and the install hint when it is missing)."""

    name: str
    reason: str

    def __str__(self) -> str:
        return f"{self.name}: skipped: {self.reason}"


def quiet(fn: Sample) -> Sample:
    """``fn`` with every warning silenced: peers emit Deprecation/Future/privacy-leak warnings per
    call, the test suite runs with warnings as errors, and a peer's own warnings are not ours."""

    def wrapped(*args: Any, **kwargs: Any) -> Any:
        return quiet_call(lambda: fn(*args, **kwargs))

    wrapped.__name__ = getattr(fn, "__name__", "peer")
    return wrapped
