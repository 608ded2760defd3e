"""The ε-claiming public API of the installed OpenDP release, for ``dpharness sweep`` (docs/sweep.md):
the names its catalogue (``bench/sweep/opendp.yaml``) must cover, as import paths
``"opendp.measurements:make_laplace"``.

The rule (docs/adapters.md, "OpenDP: the API swept"): a public callable of ``opendp.measurements``
or ``opendp.combinators``

* named ``make_*`` and defined in that module (re-exports such as ``make_proof_link``, a
  documentation helper, are left out) whose return annotation is ``Measurement`` -- a
  constructor whose result carries a privacy map, i.e. states a privacy claim (``make_chain_tt``
  returns a Transformation, ``make_fully_adaptive_composition`` an Odometer, whose loss is only
  bounded once a privacy filter, itself listed, is put over it);
* or named ``then_*`` and the partial form of a ``make_*`` of the first kind (``then_laplace`` of
  ``make_laplace``): it claims what its constructor claims, after a chain.
"""

from __future__ import annotations

import inspect
from typing import Any

__all__ = ["api", "API_MODULES"]

#: The modules whose constructors are swept.
API_MODULES = ("opendp.measurements", "opendp.combinators")


def _returns_measurement(fn: Any) -> bool:
    try:
        ret = inspect.signature(fn).return_annotation
    except (TypeError, ValueError):  # compiled callables may not describe themselves: not a constructor of ours
        return False
    return getattr(ret, "__name__", str(ret)).split(".")[-1] == "Measurement"


def api() -> list[str]:
    """The installed OpenDP's ε-claiming public functions, sorted (the rule of the module's docstring)."""
    from dpharness.adapters.common import require

    names: list[str] = []
    for module_name in API_MODULES:
        module = require(module_name, "opendp")
        public = {n: getattr(module, n) for n in dir(module) if not n.startswith("_")}
        makes = {n for n, f in public.items() if n.startswith("make_") and callable(f)
                 and getattr(f, "__module__", "") == module_name and _returns_measurement(f)}
        thens = {n for n, f in public.items() if n.startswith("then_") and callable(f)
                 and getattr(f, "__module__", "") == module_name and "make_" + n[len("then_"):] in makes}
        names += [f"{module_name}:{n}" for n in makes | thens]
    return sorted(names)
