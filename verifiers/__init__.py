"""Privacy auditing: certified lower bounds on a mechanism's real epsilon.

* :func:`audit` -- one dataset pair: select a witness event on one split, certify it on fresh
  samples with exact Clopper–Pearson bounds (:mod:`verifiers.statistical.batch`).
* :func:`search` -- also searches neighbouring pairs (:mod:`verifiers.statistical.search`;
  neighbour relations, one module each, in :mod:`verifiers.relations`), with one certification
  for the whole search.
* :func:`exact` -- exact privacy loss from a mechanism's exact law (:mod:`verifiers.exact`).
* :func:`replay` -- certify a recorded witness again on the very draws it was certified on.
* :func:`wrap` -- make any ``fn(data, size, rng)`` auditable (:mod:`verifiers.wrap`).
* :mod:`verifiers.zoo` -- deliberately broken mechanisms and their correct twins.
* :mod:`verifiers.power` -- detection probabilities by computation.
* ``dpharness audit CONFIG`` -- the harness layer, :mod:`dpharness.bench.audits`.
"""

from dpharness.verifiers.bounds import blind_delta, cp_lower, cp_upper, delta_lower_bound, epsilon_lower_bound
from dpharness.verifiers.events import Event
from dpharness.verifiers.losses.exact import ExactLoss, exact
from dpharness.verifiers.relations import Pair, are_neighbours, check_neighbours, pairs_for
from dpharness.verifiers.statistical.search import search
from dpharness.verifiers.statistical.batch import audit, replay
from dpharness.verifiers.verdict import Verdict, Witness
from dpharness.verifiers.wrap import WrappedMechanism, wrap
from dpharness.verifiers import relations
from dpharness.verifiers.statistical import sequential  # plugs the anytime-valid certification into audit/search  # noqa: F401

#: The catalogues of mechanisms with a known truth, reachable as ``verifiers.zoo`` and ``verifiers.suites``
#: but imported only when first used: the verifier core does not depend on them (they depend on it).
_CONTROLS = {"zoo": "dpharness.verifiers.controls.zoo", "suites": "dpharness.verifiers.controls.suites"}


# every relation module registers now, so that a claim may name a relation added as a new module
relations.discover()


def __getattr__(name: str):
    if name in _CONTROLS:
        import importlib

        return importlib.import_module(_CONTROLS[name])
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "audit",
    "replay",
    "search",
    "exact",
    "wrap",
    "Verdict",
    "Witness",
    "ExactLoss",
    "Event",
    "Pair",
    "WrappedMechanism",
    "pairs_for",
    "check_neighbours",
    "are_neighbours",
    "cp_lower",
    "cp_upper",
    "epsilon_lower_bound",
    "delta_lower_bound",
    "blind_delta",
]
