"""Draws of one audit on several workers (verifiers.statistical.parallel): the verdict is bit-identical for every
number of workers and backend, chunks depend on the batch size alone, and jobs=None keeps the draws
of one stream per role."""

from __future__ import annotations

import pytest

from dpharness import verifiers
from dpharness.verifiers.statistical import parallel


def _laplace(d, n, rng):
    return float(d) + rng.laplace(0, 1.0, size=n)


def _half(d, n, rng):  # claims 1 with the noise of epsilon 2: flagged by any decent audit
    return float(d) + rng.laplace(0, 0.5, size=n)


def _key(v):
    w = v.witness
    return (v.epsilon_lower, v.violated, w.counts, w.draws, w.selection_counts, str(w.event), w.pair_label)


def test_chunks_depend_on_the_batch_size_only():
    for n in (0, 1, 2047, 2048, 2049, 10**5, 10**6 + 3):
        sizes = parallel.chunk_sizes(n)
        assert sum(sizes) == n and len(sizes) <= parallel.MAX_CHUNKS
        assert all(s == sizes[0] for s in sizes[:-1])


@pytest.mark.parametrize("how", [dict(jobs=2), dict(jobs=2, backend="threading"), dict(jobs=3)],
                         ids=["loky-2", "threads-2", "loky-3"])
def test_audit_and_search_are_identical_for_any_number_of_workers(how):
    m = verifiers.wrap(_half, epsilon=1.0, neighbours="value")
    one = verifiers.audit(m, 0.0, 1.0, samples=30_000, alpha=1e-3, rng=4, jobs=1)
    other = verifiers.audit(m, 0.0, 1.0, samples=30_000, alpha=1e-3, rng=4, **how)
    assert one.violated and _key(one) == _key(other)
    s1 = verifiers.search(m, budget=60_000, alpha=1e-3, rng=4, jobs=1)
    s2 = verifiers.search(m, budget=60_000, alpha=1e-3, rng=4, **how)
    assert _key(s1) == _key(s2)
    q1 = verifiers.audit(m, 0.0, 1.0, samples=30_000, alpha=1e-3, rng=4, jobs=1, sequential=True)
    q2 = verifiers.audit(m, 0.0, 1.0, samples=30_000, alpha=1e-3, rng=4, sequential=True, **how)
    assert _key(q1) == _key(q2) and q1.extra["looks"] == q2.extra["looks"]


def test_jobs_none_keeps_one_stream_per_role():
    # the default is exactly the draws of earlier versions: a Generator per role, no chunks
    m = verifiers.wrap(_laplace, epsilon=1.0, neighbours="value")
    v = verifiers.audit(m, 0.0, 1.0, samples=5000, rng=9)
    from dpharness.verifiers.statistical.batch import SELECT, draw, stream

    y1 = draw(m, 0.0, v.witness.selection_samples, stream(9, 0, SELECT, 0))
    y2 = draw(m, 1.0, v.witness.selection_samples, stream(9, 0, SELECT, 1))
    c1, c2 = v.witness.event.count(y1), v.witness.event.count(y2)
    assert (c1, c2) == v.witness.selection_counts


def test_a_correct_claim_stays_unflagged_and_bad_arguments_are_named():
    m = verifiers.wrap(_laplace, epsilon=1.0, neighbours="value")
    assert not verifiers.audit(m, 0.0, 1.0, samples=20_000, alpha=1e-6, rng=1, jobs=2).violated
    with pytest.raises(ValueError, match="jobs must be"):
        verifiers.audit(m, 0.0, 1.0, samples=100, jobs=0)
    with pytest.raises(ValueError, match="backend must be one of"):
        verifiers.audit(m, 0.0, 1.0, samples=100, jobs=2, backend="spark")
    with pytest.raises(ValueError, match="needs backend='dask'"):
        verifiers.audit(m, 0.0, 1.0, samples=100, jobs=2, scheduler="tcp://localhost:1")
    with pytest.raises(ValueError, match="need jobs="):
        verifiers.search(m, budget=100, backend="threading")


@pytest.mark.slow
def test_a_local_dask_cluster_gives_the_same_verdict():
    pytest.importorskip("dask.distributed")
    m = verifiers.wrap(_half, epsilon=1.0, neighbours="value")
    one = verifiers.audit(m, 0.0, 1.0, samples=20_000, alpha=1e-3, rng=6, jobs=1)
    dask = verifiers.audit(m, 0.0, 1.0, samples=20_000, alpha=1e-3, rng=6, jobs=2, backend="dask")
    assert _key(one) == _key(dask)
