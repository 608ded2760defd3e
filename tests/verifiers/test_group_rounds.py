"""A round of group ranking in the pair search cuts no faster than plain halving."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest

from dpharness.verifiers.statistical import search as S
from dpharness.verifiers.statistical.batch import Choice
from dpharness.verifiers.events import Event


def _round(n_bases: int, n_moves: int, seed: int = 0):
    """Pairs (base b, move m) on finite outputs; every dataset has its own law, so the groups'
    pooled scores differ and each grouping keeps its better half."""
    rng = np.random.default_rng(seed)
    P = n_bases * n_moves
    ends = [(b, n_bases + b * n_moves + m) for b in range(n_bases) for m in range(n_moves)]
    n_data = n_bases + P
    pool = {i: [rng.choice(4, size=400, p=rng.dirichlet(np.ones(4)))] for i in range(n_data)}
    factors = [[j % n_moves for j in range(P)], [j // n_moves for j in range(P)]]
    ev = Event("ge", lo=1.0)
    choices = {j: Choice(float(s), ev, "d1>d2", 1, 1, 400) for j, s in enumerate(rng.normal(size=P))}
    held = [SimpleNamespace(claim=SimpleNamespace(delta=0.0))] * P
    return list(range(P)), factors, pool, ends, choices, [0.0] * P, held


@pytest.mark.parametrize("n_bases, n_moves", [(4, 4), (6, 9), (4, 8)])
def test_a_group_round_keeps_at_least_half(n_bases, n_moves, monkeypatch):
    alive, factors, pool, ends, choices, margin, held = _round(n_bases, n_moves)
    kw = dict(finite=True, n_cert=10_000, alpha=0.05, events="all")
    kept = S._best_groups(alive, factors, pool, ends, choices, margin, held, **kw)
    assert len(kept) >= math.ceil(len(alive) / 2)
    # what fills up to half is the best of the rest on their own scores, and the groups' choice stays
    monkeypatch.setattr(S, "GROUP_KEEP", 0.0)
    by_groups = S._best_groups(alive, factors, pool, ends, choices, margin, held, **kw)
    assert set(by_groups) <= set(kept)
    # with two groupings of >= 3 groups each, their better halves meet in well under half the pairs
    assert len(by_groups) < math.ceil(len(alive) / 2)
    rest = sorted(set(alive) - set(by_groups), key=lambda j: -choices[j].score)
    assert set(kept) - set(by_groups) == set(rest[: len(kept) - len(by_groups)])
