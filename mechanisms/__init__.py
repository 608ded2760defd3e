"""Exact, vectorised differentially private selection mechanisms.

``make(name, **params)`` builds any registered mechanism; ``available()`` lists the names of the
default namespace (``available(namespace="zoo")`` or ``make("zoo/<name>")`` reach the verifier's
zoo once :mod:`verifiers` is imported; :mod:`mechanisms.registry`). The contracts every mechanism
follows are in :mod:`mechanisms.contracts`, the output domains in :mod:`mechanisms.domains`.
"""

from dpharness.mechanisms.base import NEIGHBOURS, Mechanism, ParamError, PrivacyClaim
from dpharness.mechanisms.registry import available, describe, make, namespaces, register
from dpharness.mechanisms import contracts, domains, laws

# Importing the modules registers their mechanisms.
from dpharness.mechanisms import finite, medians, smooth_sensitivity, continuous, topk, quantiles, quantile_baselines  # noqa: F401
from dpharness.mechanisms import snapping, discrete_laplace  # noqa: F401  (float-safe members)

__all__ = ["NEIGHBOURS", "Mechanism", "ParamError", "PrivacyClaim", "available", "describe", "make", "namespaces", "register",
           "contracts", "domains", "laws"]
