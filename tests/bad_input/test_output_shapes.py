"""A release whose shape depends on the dataset: not a crash but a support violation, with the two
shapes as the witness (the width alone tells the datasets apart)."""

from __future__ import annotations

import numpy as np

from dpharness import verifiers


def _width_is_n(d, n, rng):
    return rng.laplace(0, 1, size=(n, len(d)))


def test_rows_of_two_widths_are_a_support_violation():
    m = verifiers.wrap(_width_is_n, epsilon=1.0, neighbours="add_remove")
    v = verifiers.audit(m, np.array([1.0, 2.0]), np.array([1.0, 2.0, 3.0]), samples=2000, alpha=1e-3, rng=0)
    assert v.violated and v.support_violation
    assert v.witness.event.kind == "shape" and "row of 2 coordinates" in v.summary
    # the certified event is exactly "this shape": every draw under d1, none under d2
    assert v.witness.counts[0] == v.witness.draws[0] and v.witness.counts[1] == 0


def test_scalar_under_one_dataset_and_rows_under_the_other():
    m = verifiers.wrap(lambda d, n, rng: rng.laplace(0, 1, size=n) if len(d) < 3 else rng.laplace(0, 1, size=(n, 2)),
                       epsilon=1.0, neighbours="add_remove")
    v = verifiers.audit(m, np.array([1.0, 2.0]), np.array([1.0, 2.0, 3.0]), samples=1000, alpha=1e-3, rng=1)
    assert v.support_violation and "{y is a scalar}" in v.summary
    pairs = [verifiers.Pair(np.array([1.0]), np.array([1.0, 2.0]), "one added"),
             verifiers.Pair(np.array([1.0, 2.0]), np.array([1.0, 2.0, 3.0]), "width changes"),
             verifiers.Pair(np.array([1.0, 2.0, 3.0]), np.array([1.0, 2.0, 3.0, 4.0]), "both wide")]
    s = verifiers.search(m, generator=pairs, budget=20_000, alpha=1e-3, rng=1)
    assert s.violated and s.witness.event.kind == "shape" and s.witness.pair_label == "width changes"


def test_a_constant_width_is_not_flagged_by_its_shape():
    m = verifiers.wrap(lambda d, n, rng: rng.laplace(0, 1, size=(n, 3)), epsilon=1.0, neighbours="add_remove")
    v = verifiers.audit(m, np.array([1.0, 2.0]), np.array([1.0, 2.0, 3.0]), samples=2000, alpha=1e-3, rng=0)
    assert not v.violated and v.witness.event.kind != "shape"
