"""Events: the sets of outputs whose probabilities under D and D' the verifier compares.

docs/auditing.md, "Event families". One module per family, each building a candidate list
(:class:`Candidates`) from the *selection* draws; the chosen event is then a fixed set that the
certification draws are counted against (:meth:`Event.contains`):

* :mod:`.real` -- thresholds (tails included), intervals and their complements, atoms;
* :mod:`.finite` -- every output of a finite set and unions of outputs ranked by their ratio;
* :mod:`.vector` -- coordinates, "no answer" patterns, label rows and learned scores of rows;
* :mod:`.floats` -- the binary representation of released doubles (opt-in: ``float_events``).
"""

from dpharness.verifiers.events.core import KINDS, Candidates, Event, concat
from dpharness.verifiers.events.finite import UNION_CAP, finite_candidates
from dpharness.verifiers.events.bits import float_labels
from dpharness.verifiers.events.floats import FLOAT_VECTOR_WIDTH, float_candidates
from dpharness.verifiers.events.real import TAIL_KEEP, THRESHOLD_CAP, real_candidates, threshold_gap
from dpharness.verifiers.events.vector import ROW_LABEL_CAP, VECTOR_INTERVAL_WIDTH, vector_candidates

__all__ = ["Event", "Candidates", "KINDS", "concat", "real_candidates", "finite_candidates", "vector_candidates",
           "float_candidates", "float_labels", "THRESHOLD_CAP", "TAIL_KEEP", "threshold_gap", "UNION_CAP",
           "VECTOR_INTERVAL_WIDTH", "ROW_LABEL_CAP", "FLOAT_VECTOR_WIDTH"]
