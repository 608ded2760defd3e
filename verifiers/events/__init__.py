"""Events: the sets of outputs whose probabilities under D and D' the verifier compares.

docs/auditing.md, "Event families". One module per family, each defining its event classes
(subclasses of :class:`Event` with ``contains`` and ``describe``) and a :class:`Family` object that
builds a candidate list (:class:`Candidates`) from the *selection* draws; the chosen event is then a
fixed set that the certification draws are counted against (:meth:`Event.contains`):

* :mod:`.real` -- ``real``: thresholds (tails included), atoms, "no answer"; ``intervals``:
  intervals and their complements;
* :mod:`.finite` -- ``finite``: every output of a finite set and unions of outputs ranked by their ratio;
* :mod:`.vector` -- ``vector``: "no answer" patterns and learned scores of rows;
* :mod:`.floats` -- ``floats``: the binary representation of released doubles (opt-in: ``float_events``);
* :mod:`.shape` -- ``shape``: outputs whose shape depends on the dataset (always on).

Every module of this package is imported here (:func:`discover`), so a family module registers
itself: adding a family is one new module (and its test). ``events=`` of :func:`verifiers.audit`
names a set of families (:func:`resolve_events`).
"""

from dpharness.verifiers.events.core import Candidates, Event, LabelEvent, concat, event_class, event_kinds
from dpharness.verifiers.events.families import (FLOATS, PRESETS, Draws, Family, build_candidates, discover,
                                                 event_families, family_names, register, registry, resolve_events)
from dpharness.verifiers.events.real import TAIL_KEEP, THRESHOLD_CAP, real_candidates, threshold_gap
from dpharness.verifiers.events.finite import UNION_CAP, finite_candidates
from dpharness.verifiers.events.vector import ROW_LABEL_CAP, VECTOR_INTERVAL_WIDTH, vector_candidates
from dpharness.verifiers.events.bits import float_labels
from dpharness.verifiers.events.floats import FLOAT_VECTOR_WIDTH, float_candidates

discover()

#: Every event kind (``Event.kind``), from the event classes the family modules define.
KINDS = event_kinds()

__all__ = ["Event", "LabelEvent", "Candidates", "KINDS", "concat", "event_class", "event_kinds",
           "Family", "Draws", "register", "registry", "family_names", "build_candidates", "event_families",
           "resolve_events", "discover", "PRESETS", "FLOATS",
           "real_candidates", "finite_candidates", "vector_candidates",
           "float_candidates", "float_labels", "THRESHOLD_CAP", "TAIL_KEEP", "threshold_gap", "UNION_CAP",
           "VECTOR_INTERVAL_WIDTH", "ROW_LABEL_CAP", "FLOAT_VECTOR_WIDTH"]
