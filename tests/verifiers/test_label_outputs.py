"""Finite outputs held as Python objects: lists of different lengths (a sparse vector's answers up
to its first "above"), None beside numbers, strings of different lengths. Each draw is one label
(its repr), the same for selection and certification draws, and events count exactly what they
name."""

import json

import numpy as np
import pytest

from dpharness import verifiers
from dpharness.verifiers.events.core import Event
from dpharness.verifiers.events.finite import OutputSet
from dpharness.verifiers.statistical.draws import draw


def _answers_until_above(data, size, rng):
    """BROKEN sparse vector: no noise on the queries (only the threshold's), answers as a Python
    list of booleans that stops at the first True, so its length varies from draw to draw."""
    out = []
    for t in 1.0 + rng.laplace(scale=2.0, size=size):
        row = []
        for q in data:
            row.append(bool(q >= t))
            if row[-1]:
                break
        out.append(row)
    return out


def test_a_variable_length_release_is_one_label_per_draw():
    m = verifiers.wrap(_answers_until_above, epsilon=0.5, neighbours="score_linf", kind="finite", sensitivity=1)
    y = draw(m, [0.0, 2.0], 2000, np.random.default_rng(3))
    assert y.shape == (2000,) and y.dtype.kind == "U"
    # on [0, 2] the threshold t ~ 1 + Lap(2) gives [True] (t <= 0), [False, True] (0 < t <= 2) or
    # [False, False] (t > 2); each has probability > 0.2, so all three occur in 2,000 draws
    assert set(y.tolist()) == {"(True,)", "(False, True)", "(False, False)"}


def test_a_support_violation_in_variable_length_releases_is_certified_and_replays_from_json():
    m = verifiers.wrap(_answers_until_above, epsilon=0.5, neighbours="score_linf", kind="finite", sensitivity=1)
    # [False, True] needs 0 < t <= 2 under [0, 2] (probability about 0.44) and cannot happen under
    # [1, 1] (the first query answers whenever the second would): the count under [1, 1] is 0 on
    # every seed, so the test is not statistical on that side
    v = verifiers.audit(m, [0.0, 2.0], [1.0, 1.0], samples=5000, alpha=0.05, rng=1)
    assert v.violated and v.support_violation
    assert "(False, True)" in v.witness.event.values
    again = Event.from_json(json.loads(json.dumps(json.loads(v.witness.event.to_json()))))
    w = v.witness
    r = verifiers.replay(m, w.d1, w.d2, event=again, direction=w.direction, samples=w.samples, seed=w.seed,
                         key=w.key, chunked=w.chunked)
    assert r.witness.counts == w.counts


def test_none_beside_numbers_is_a_label():
    def first_above(data, size, rng):  # None when no query is above the noisy threshold
        t = 1.0 + rng.laplace(scale=4.0, size=size)
        return [next((i for i, q in enumerate(data) if q >= ti), None) for ti in t]

    m = verifiers.wrap(first_above, epsilon=0.5, neighbours="score_linf", kind="finite", sensitivity=1)
    v = verifiers.search(m, generator=[([0.0, 0.0, 0.0, 2.0], [1.0, 1.0, 1.0, 1.0])], budget=20_000, rng=2)
    # index 3 needs 0 < t <= 2 under the first dataset and is impossible under the second
    assert v.support_violation and v.witness.event.contains(np.array([3, 0])).tolist() == [True, False]
    # None is read as NaN, so a batch with None and one without give the same labels
    # (t ~ 1 + Lap(4) exceeds 100 with probability e^{-24.75}/2: never in 400 draws)
    mixed = draw(m, [5.0, 5.0], 400, np.random.default_rng(0))
    plain = draw(m, [100.0, 100.0], 400, np.random.default_rng(0))
    assert np.isnan(mixed).any() and plain.dtype.kind == "i"
    nothing = OutputSet("set", values=(float("nan"),))
    assert nothing.count(mixed) == int(np.isnan(mixed).sum()) and nothing.count(plain) == 0


def test_label_events_never_cut_a_label_to_the_draws_width():
    # a batch of one-letter draws must not count "ab" as "a" (numpy casts to the batch's width)
    e = OutputSet("set", values=("ab",))
    assert not e.contains(np.array(["a", "a", "b"])).any()
    assert e.contains(np.array(["ab", "a"])).tolist() == [True, False]
    obj = np.empty(3, dtype=object)
    obj[:] = ["ab", None, "a"]
    assert e.contains(obj).tolist() == [True, False, False]
    # a label chosen on text draws counts numeric draws of the same output, and the reverse
    assert OutputSet("set", values=("3",)).contains(np.array([3, 1])).tolist() == [True, False]
    assert OutputSet("set", values=(3,)).contains(np.array(["3", "x"])).tolist() == [True, False]
    # and an integer batch is never matched by a fraction cast to its dtype
    assert not OutputSet("set", values=(2.5,)).contains(np.array([2, 3])).any()


def test_a_real_mechanism_still_rejects_object_outputs():
    for out in (["a"], [{"x": 1}], [None, "a"]):
        m = verifiers.wrap(lambda d, n, rng, out=out: (out * n)[:n], epsilon=1.0, neighbours="value")
        with pytest.raises(TypeError, match="kind='finite'"):
            verifiers.audit(m, 0.0, 1.0, samples=100, rng=1)


def test_a_real_release_with_none_for_no_answer_reads_none_as_nan():
    def svt_values(data, size, rng):  # the value where above, None below: plain-Python sparse vector
        t = 1.0 + rng.laplace(scale=2.0, size=size)
        return [[q + 0.5 if q >= ti else None for q in data] for ti in t]

    m = verifiers.wrap(svt_values, epsilon=1.0, neighbours="score_linf", sensitivity=1)
    y = draw(m, [0.0, 2.0], 500, np.random.default_rng(1))
    assert y.dtype == np.float64 and y.shape == (500, 2)
    assert np.isnan(y[:, 0]).any() and set(np.unique(y[~np.isnan(y)]).tolist()) <= {0.5, 2.5}


def test_a_real_release_of_different_lengths_says_how_to_fix_it():
    m = verifiers.wrap(lambda d, n, rng: [[1.0] * (1 + i % 2) for i in range(n)], epsilon=1.0, neighbours="value")
    with pytest.raises(TypeError, match="pad each draw with None or NaN"):
        m.sample(0.0, size=4, rng=1)
