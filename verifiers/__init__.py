"""Privacy auditing: certified lower bounds on a mechanism's real epsilon.

* :func:`audit` -- one dataset pair: select a witness event on one split, certify it on fresh
  samples with exact Clopper–Pearson bounds (:mod:`verifiers.statistical`).
* :func:`search` -- also searches neighbouring pairs (:mod:`verifiers.search`,
  :mod:`verifiers.neighbours`), with one certification for the whole search.
* :func:`exact` -- exact privacy loss from a mechanism's exact law (:mod:`verifiers.exact`).
* :func:`wrap` -- make any ``fn(data, size, rng)`` auditable (:mod:`verifiers.wrap`).
* :mod:`verifiers.zoo` -- deliberately broken mechanisms and their correct twins.
* :mod:`verifiers.power` -- detection probabilities by computation.
* ``dpharness audit CONFIG`` -- the harness layer, :mod:`dpharness.bench.audits`.
"""

from .bounds import blind_delta, cp_lower, cp_upper, delta_lower_bound, epsilon_lower_bound
from .events import Event
from .exact import ExactLoss, exact
from .neighbours import Pair, are_neighbours, check_neighbours, pairs_for
from .search import search
from .statistical import audit
from .verdict import Verdict, Witness
from .wrap import WrappedMechanism, wrap
from . import zoo  # registers the zoo's mechanisms in the registry namespace "zoo"  # noqa: E402,F401
from . import sequential  # plugs the anytime-valid certification into audit/search  # noqa: E402,F401

__all__ = [
    "audit",
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
