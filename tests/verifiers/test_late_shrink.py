"""Late ranking rounds of a release with few distinct rows use the least shrinkage."""

from __future__ import annotations

import numpy as np

from dpharness.verifiers import bounds
from dpharness.verifiers.controls.suites import get
from dpharness.verifiers.statistical import search as S
from dpharness.verifiers.statistical.batch import selection_score, shrink_level


def _draws(name: str, n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    m = get(name).mechanism
    rng = np.random.default_rng(seed)
    d1, d2 = np.zeros(10), np.array([1.0] * 5 + [-1.0] * 5)
    return m.sample(d1, n, rng), m.sample(d2, n, rng)


def test_few_row_vector_release_gets_the_least_shrinkage_late_only():
    # sparse vector with a cutoff: 11 distinct label rows
    y1, y2 = _draws("dpsniper/SparseVectorTechnique4", S.LATE_DRAWS)
    assert len(np.unique(np.concatenate([y1, y2]), axis=0)) <= S.FEW_ROWS
    assert S.late_shrink(y1, y2, finite=True) == S.LATE_SHRINK
    assert S.late_shrink(y1[:-1], y2[:-1], finite=True) is None  # an early round
    assert S.late_shrink(y1, y2, finite=False) is None
    # the level is the one shrink_level gives the fewest candidates, never less shrinkage than that
    assert S.LATE_SHRINK == shrink_level(1)


def test_many_rows_and_scalars_keep_their_own_level():
    # sparse vector without a cutoff: up to 1,024 rows, seen by the hundred at this size
    y1, y2 = _draws("dpsniper/SparseVectorTechnique6", S.LATE_DRAWS)
    assert len(np.unique(np.concatenate([y1, y2]), axis=0)) > S.FEW_ROWS
    assert S.late_shrink(y1, y2, finite=True) is None
    # a scalar release (noisy max's index): its candidates already are its distinct events
    idx = np.arange(2 * S.LATE_DRAWS) % 5
    assert S.late_shrink(idx[: S.LATE_DRAWS], idx[S.LATE_DRAWS:], finite=True) is None


def test_the_late_level_ranks_the_event_that_certifies_more():
    """The arithmetic behind the rule, on SparseVectorTechnique4's two kinds of event at the last
    round's 60,000 draws per dataset: its rare strong event (probabilities 0.0171 / 0.0144, log-ratio
    0.172, a row of the half move) against a frequent weak one (0.100 / 0.090, log-ratio 0.105, a
    leader move's). Certified on 3e5 draws per dataset at their true probabilities the rare one gives
    more; the candidates' own level (about 180 candidates) ranks it below, the late level above."""
    n_sel, n_cert = 60_000, 300_000
    num, den = np.array([0.0171, 0.100]), np.array([0.0144, 0.0905])
    pi = bounds.conditional_epsilon_lower(num * n_cert, den * n_cert, 0.05)
    assert pi[0] > pi[1] + 0.03
    default = selection_score(num * n_sel, den * n_sel, n_sel, n_cert, 0.05, shrink=shrink_level(182))
    late = selection_score(num * n_sel, den * n_sel, n_sel, n_cert, 0.05, shrink=S.LATE_SHRINK)
    assert default[0] < default[1] and late[0] > late[1]
