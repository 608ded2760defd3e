"""Exact, vectorised differentially private selection mechanisms.

``make(name, **params)`` builds any registered mechanism; ``available()`` lists the names of the
default namespace (``available(namespace="zoo")`` or ``make("zoo/<name>")`` reach the verifier's
zoo once :mod:`verifiers` is imported; :mod:`mechanisms.registry`). The contracts every mechanism
follows are in :mod:`mechanisms.contracts`, the output domains in :mod:`mechanisms.domains`.
"""

from .base import NEIGHBOURS, Mechanism, PrivacyClaim
from .registry import available, describe, make, namespaces, register
from . import contracts, domains, laws

# Importing the modules registers their mechanisms.
from . import finite, medians, smooth_sensitivity, continuous, topk, quantiles, quantile_baselines  # noqa: E402,F401
from . import snapping, discrete_laplace  # noqa: E402,F401  (float-safe members)

__all__ = ["NEIGHBOURS", "Mechanism", "PrivacyClaim", "available", "describe", "make", "namespaces", "register",
           "contracts", "domains", "laws"]
