"""Exact, vectorised differentially private selection mechanisms.

``make(name, **params)`` builds any registered mechanism; ``available()`` lists the names of the
default namespace (``available(namespace="zoo")`` or ``make("zoo/<name>")`` reach the verifier's
zoo, loaded the first time its namespace is used; :mod:`mechanisms.registry`). The contracts every mechanism
follows are in :mod:`mechanisms.contracts`, the output domains in :mod:`mechanisms.domains`.
"""

from dpharness.mechanisms.base import NEIGHBOURS, Mechanism, ParamError, PrivacyClaim
from dpharness.mechanisms.registry import available, describe, make, namespaces, register
from dpharness.mechanisms import contracts, domains, laws



def _discover() -> None:
    """Import every module of this package: importing a module registers its mechanisms (``@register``),
    so adding a mechanism is adding a module -- there is no list to edit."""
    import importlib
    import pkgutil

    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        importlib.import_module(f"{__name__}.{info.name}")


_discover()

__all__ = ["NEIGHBOURS", "Mechanism", "ParamError", "PrivacyClaim", "available", "describe", "make", "namespaces", "register",
           "contracts", "domains", "laws"]
