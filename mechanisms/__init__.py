"""Exact, vectorised differentially private selection mechanisms.

``make(name, **params)`` builds any registered mechanism; ``available()`` lists the names.
"""

from .base import NEIGHBOURS, Mechanism, PrivacyClaim
from .registry import available, describe, make, register
from . import laws

# Importing the modules registers their mechanisms.
from . import finite, medians, smooth_sensitivity, continuous  # noqa: E402,F401

__all__ = ["NEIGHBOURS", "Mechanism", "PrivacyClaim", "available", "describe", "make", "register", "laws"]
