"""StatDP's sparse-vector functions as StatDP publishes them: they return a summary, not the raw
answers (SVT: the number of "below" answers; iSVT1-3: the Hamming distance of the answers, cut at
the cutoff, to "first half above, rest below"; iSVT4: the number of "below" answers and the last
output, the released noisy query or False). A user re-implementing the suite from StatDP's code
audits these outputs, so the search must flag the broken ones from them too, with no pair given.

Thorough tier: ten searches of 10^6 calls. Measured on seeds 1-8 before the test was written
(claim 0.7): iSVT1 10.1 every seed, iSVT2 1.25-1.36, iSVT3 0.84-1.06, iSVT4 0.84-0.95; the
correct SVT 0.37-0.42. The seed is fixed, so the test is deterministic; the margins above say it
is not tuned to one lucky seed.
"""

from __future__ import annotations

import numpy as np
import pytest

from dpharness import verifiers

EPS = 0.7  # StatDP's default epsilon
T = 1.0


def _answers(data, n, rng, *, rho_scale, nu_scale, cutoff, strict):
    """(noisy queries, above, reached): StatDP's loop, vectorised over n draws; ``reached`` is
    False after the first "above" when the function stops there (N = 1)."""
    q = np.asarray(data, dtype=np.float64)[None, :]
    rho = rng.laplace(scale=rho_scale, size=(n, 1))
    noisy = q + (rng.laplace(scale=nu_scale, size=(n, q.shape[1])) if nu_scale else 0.0)
    above = noisy > T + rho if strict else noisy >= T + rho
    reached = (np.cumsum(above, axis=1) - above) < 1 if cutoff else np.ones_like(above)
    return noisy, above, reached


def _hamming(above, reached):
    # zip_longest against the pattern: a query never reached differs from it
    pattern = np.arange(above.shape[1]) < above.shape[1] // 2
    return np.where(reached, above != pattern, True).sum(axis=1)


def _svt(data, n, rng):  # correct: rho ~ Lap(2/eps), nu ~ Lap(4N/eps), N = 1
    _, above, reached = _answers(data, n, rng, rho_scale=2 / EPS, nu_scale=4 / EPS, cutoff=True, strict=False)
    return (reached & ~above).sum(axis=1)


def _isvt1(data, n, rng):  # no query noise
    return _hamming(*_answers(data, n, rng, rho_scale=2 / EPS, nu_scale=0, cutoff=False, strict=False)[1:])


def _isvt2(data, n, rng):  # query noise not scaled with N, no cutoff
    return _hamming(*_answers(data, n, rng, rho_scale=2 / EPS, nu_scale=2 / EPS, cutoff=False, strict=False)[1:])


def _isvt3(data, n, rng):  # query noise Lap(4/(3 eps)) not scaled with N
    return _hamming(*_answers(data, n, rng, rho_scale=4 / EPS, nu_scale=4 / (3 * EPS), cutoff=True, strict=True)[1:])


def _isvt4(data, n, rng):  # releases the noisy query instead of True
    noisy, above, reached = _answers(data, n, rng, rho_scale=2 / EPS, nu_scale=2 / EPS, cutoff=True, strict=True)
    hit = above & reached
    last = np.where(hit.any(axis=1), np.max(np.where(hit, noisy, -np.inf), axis=1), 0.0)  # False reads as 0
    return np.stack([(reached & ~above).sum(axis=1).astype(np.float64), last], axis=1)


CASES = [("SVT", _svt, "finite", False), ("iSVT1", _isvt1, "finite", True), ("iSVT2", _isvt2, "finite", True),
         ("iSVT3", _isvt3, "finite", True), ("iSVT4", _isvt4, "real", True)]


@pytest.mark.slow
@pytest.mark.parametrize("name,fn,kind,broken", CASES, ids=[c[0] for c in CASES])
def test_statdp_functions_with_their_own_summaries_are_judged_from_them(name, fn, kind, broken):
    m = verifiers.wrap(fn, epsilon=EPS, neighbours="score_linf", sensitivity=1, kind=kind, name=name)
    v = verifiers.search(m, budget=1_000_000, alpha=0.05, rng=1)
    assert v.violated == broken, v.summary
