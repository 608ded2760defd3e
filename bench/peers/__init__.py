"""Peer DP libraries (optional ``peers`` extra): one adapter module per library, used by both the
performance benchmark (``dpharness bench``) and audits (``peer:`` mechanisms of audit configs).

* :mod:`bench.peers.diffprivlib_` -- IBM diffprivlib: ``tools.median``, ``mechanisms.Exponential``,
  ``mechanisms.PermuteAndFlip``;
* :mod:`bench.peers.opendp_` -- OpenDP: ``make_private_quantile`` over a grid, ``make_noisy_max``;
* :mod:`bench.peers.pydp` -- Google python-dp: ``laplacian.Median``;
* :mod:`bench.peers.wrapped` -- the same samplers wrapped with their documented claims for the
  verifier (:data:`AUDIT_PEERS`, :func:`build`).

Each adapter builds a peer mechanism exactly one way (calls and conventions in docs/peer-libraries.md), so
what ``dpharness bench`` times is what ``dpharness audit`` audits. Nothing is imported at module
level: a library is imported when a peer is built (by :func:`require`, through the adapters' one
import helper); when it is missing or broken the benchmark gets a :class:`Skipped` (reason + install
hint) and an audit gets :class:`PeerUnavailable` (a :class:`dpharness.adapters.MissingLibrary`).
:func:`missing_summary` turns many skips into one line, so "not installed" is said once.
"""

from __future__ import annotations

from importlib import metadata
from typing import Any, Callable, Iterable

from dpharness import adapters
from dpharness.adapters.common import MissingLibrary, import_note

from dpharness.bench.peers._common import INSTALL_HINT, PEER_PACKAGES, PeerImpl, PeerSampler, PeerUnavailable, Skipped

__all__ = [
    "INSTALL_HINT",
    "PEER_PACKAGES",
    "AUDIT_PEERS",
    "PeerImpl",
    "PeerSampler",
    "PeerUnavailable",
    "Skipped",
    "peer_versions",
    "median_peers",
    "finite_peers",
    "missing_summary",
    "require",
    "version",
    "build",
    "parameters",
]

#: Names of the auditable peer mechanisms (``mechanism: {peer: NAME, ...}`` in audit configs).
AUDIT_PEERS = ("diffprivlib_exponential", "diffprivlib_permute_and_flip", "diffprivlib_median", "opendp_noisy_max",
               "opendp_quantile", "pydp_median")


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def version(dist: str) -> str | None:
    """Installed version of distribution ``dist`` (``None`` when not installed)."""
    return _version(dist)


def peer_versions() -> dict[str, str | None]:
    """Installed versions of the peer packages (``None`` when not installed)."""
    return {dist: _version(dist) for dist in PEER_PACKAGES}


def require(module: str, dist: str) -> Any:
    """Import ``module`` of distribution ``dist`` through :func:`dpharness.adapters.require` (the one
    import helper), or raise :class:`PeerUnavailable` saying why: not installed, installed but
    failing to import, or broken."""
    try:
        return adapters.require(module, dist)
    except MissingLibrary as exc:
        cause = exc.__cause__  # the import's own ImportError
        if _version(dist) is None:
            why = f"{dist} is not installed ({cause}); {INSTALL_HINT}"
        else:
            why = f"{dist} {_version(dist)} is installed but fails to import: {cause}{import_note(dist)}; {INSTALL_HINT}"
        raise PeerUnavailable(why, dist=dist) from None
    except Exception as exc:  # a broken peer (whatever its import raises) must not stop the benchmark
        raise PeerUnavailable(f"{dist} fails to import: {type(exc).__name__}: {exc}; {INSTALL_HINT}", dist=dist) from None


def _collect(builders: Iterable[tuple[str, Callable[[], PeerSampler]]]) -> tuple[list[PeerImpl], list[Skipped]]:
    peers: list[PeerImpl] = []
    skipped: list[Skipped] = []
    for name, build_one in builders:
        try:
            s = build_one()
        except PeerUnavailable as exc:
            skipped.append(Skipped(name, str(exc)))
        except Exception as exc:  # the peer library's own code may raise anything: the benchmark goes on
            skipped.append(Skipped(name, f"could not build the measurement: {type(exc).__name__}: {exc}"))
        else:
            peers.append(PeerImpl(s.name, s.library, s.sample, s.note))
    return peers, skipped


def median_peers(
    lower: float, upper: float, epsilon: float, *, grid_step: float = 1e-3
) -> tuple[list[PeerImpl], list[Skipped]]:
    """Peer private medians of data on ``[lower, upper]`` at ``epsilon``.

    Parameters
    ----------
    lower, upper : float
        Data bounds given to every peer.
    epsilon : float
        Nominal epsilon passed to each peer (their neighbour relations differ; see docs/peer-libraries.md).
    grid_step : float
        Spacing of OpenDP's candidate grid (it needs one; a coarse grid is an error floor).

    Returns
    -------
    (peers, skipped)
        ``diffprivlib.tools.median``, ``opendp.make_private_quantile``, ``pydp.laplacian.Median``.
    """
    from dpharness.bench.peers import diffprivlib_, opendp_, pydp

    return _collect([
        ("diffprivlib.tools.median", lambda: diffprivlib_.median(lower, upper, epsilon)),
        ("opendp.make_private_quantile", lambda: opendp_.quantile(lower, upper, epsilon, grid_step)),
        ("pydp.laplacian.Median", lambda: pydp.median(lower, upper, epsilon)),
    ])


def finite_peers(epsilon: float, sensitivity: float) -> tuple[list[PeerImpl], list[Skipped]]:
    """Peer selection mechanisms over a score vector (one draw per call).

    ``run(scores, draws, rng)`` builds the peer's object once (as a user would) and then draws
    ``draws`` times, so set-up is amortised over the draws exactly as in a batched sampler.
    Names: ``diffprivlib.Exponential``, ``diffprivlib.PermuteAndFlip`` and
    ``opendp.make_noisy_max`` (permute-and-flip with exponential noise, pure DP).
    """
    from dpharness.bench.peers import diffprivlib_, opendp_

    return _collect([
        ("diffprivlib.Exponential", lambda: diffprivlib_.exponential(epsilon, sensitivity)),
        ("diffprivlib.PermuteAndFlip", lambda: diffprivlib_.permute_and_flip(epsilon, sensitivity)),
        ("opendp.make_noisy_max", lambda: opendp_.noisy_max(epsilon, sensitivity)),
    ])


def missing_summary(skipped: Iterable[Skipped]) -> str | None:
    """One line for every peer skipped because its library is not installed (``None`` if none):
    ``peer libraries not installed: diffprivlib, opendp (skipped: ...); install the peers extra ...``."""
    names: list[str] = []
    libs: list[str] = []
    for s in skipped:
        if "is not installed" in s.reason:
            names.append(s.name)
            lib = s.reason.split(" is not installed", 1)[0]
            if lib not in libs:
                libs.append(lib)
    if not names:
        return None
    return f"peer libraries not installed: {', '.join(libs)} (skipped: {', '.join(names)}); {INSTALL_HINT}"


def parameters(name: str) -> dict[str, Any]:
    """Parameters (with defaults) of auditable peer ``name`` (no library is imported)."""
    from dpharness.bench.peers.wrapped import parameters as _parameters

    if name not in AUDIT_PEERS:
        raise ValueError(f"unknown peer mechanism {name!r}; accepted: {', '.join(AUDIT_PEERS)}")
    return _parameters(name)


def build(name: str, **params: Any) -> Any:
    """Auditable peer ``name`` (a :class:`verifiers.WrappedMechanism` with the documented claim);
    ``ValueError`` for unknown names/parameters, :class:`PeerUnavailable` without the library."""
    from dpharness.bench.peers.wrapped import build as _build

    return _build(name, **params)
