"""Witnesses replay from the files: the whole event and pair as JSON, and the certification draws
found again from the witness's seed, stream key and draw mode."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from dpharness import verifiers as V
from dpharness.verifiers.events.core import Event, event_kinds
from dpharness.verifiers.projection import Projection
from dpharness.verifiers.verdict import data_from_json, data_to_json


def _leaky_sum():
    # a float Laplace on a sum: its bit patterns tell the datasets apart (a support violation)
    return V.wrap(lambda d, n, rng: float(np.sum(d)) + rng.laplace(0.0, 1.0, n), epsilon=1.0, neighbours="add_remove")


EVENTS = [
    Event("le", hi=0.1 + 0.2), Event("ge", lo=-3.5), Event("interval", lo=-math.inf, hi=2.0),
    Event("outside", lo=-1.0, hi=1.0), Event("atom", lo=5e-324, hi=5e-324), Event("nan"),
    Event("set", values=(0, 2, 3)), Event("set", values=((1, 0), (0, 1))), Event("set", values=("a", "b")),
    Event("float", values=((0, -3, -55), (1, 2, -50)), coord=2), Event("float", values=((1, -52),)),
    Event("reachable", values=("laplace", 1, 0.1 + 0.2, 1.0 / 3.0)),
    Event("reachable", values=("uniform", 0, 0.0, 0.1 + 0.2, 0.7, 1.0)),
    Event("le", hi=0.25, projection=Projection("real", 2, (1,), ((0, 1.0),), (0, 1), (0.5, -1e-300),
                                                (1.0, 2.0), (0.1, -0.2, 0.3))),
]


def test_every_event_kind_is_covered():
    assert {e.kind for e in EVENTS} >= set(event_kinds()) - {"pattern", "shape"}


@pytest.mark.parametrize("event", EVENTS, ids=lambda e: e.kind)
def test_an_event_written_as_json_reads_back_equal(event):
    text = event.to_json()
    json.loads(text)  # strict JSON: no NaN or Infinity literals
    back = Event.from_json(text)
    assert repr(back) == repr(event) and type(back) is type(event)
    assert Event.from_json(json.loads(text)).to_json() == text


@pytest.mark.parametrize("data", [
    np.array([0.1, -0.0, np.inf, np.nan, 5e-324]), np.arange(6, dtype=np.int32).reshape(2, 3), 0.30000000000000004,
    7, [np.array([1.0]), 2.5], pd.DataFrame({"age": [30, 41], "income": [1.5, np.nan], "city": ["a", "b"]}),
], ids=["floats", "ints", "scalar", "int", "list", "frame"])
def test_a_dataset_written_as_json_reads_back_bit_for_bit(data):
    back = data_from_json(data_to_json(data))
    if isinstance(data, pd.DataFrame):
        pd.testing.assert_frame_equal(back, data)
    elif isinstance(data, np.ndarray):
        assert back.dtype == data.dtype and back.shape == data.shape
        assert np.array_equal(back.view(np.uint8), data.view(np.uint8))  # every bit, NaN and -0.0 included
    elif isinstance(data, list):
        assert np.array_equal(back[0], data[0]) and back[1] == data[1]
    else:
        assert back == data and type(back) is type(data)


def test_unwritable_data_gives_no_json_rather_than_a_wrong_one():
    assert data_to_json(object()) == "" and data_to_json(np.array([object()])) == ""


@pytest.mark.parametrize("jobs", [None, pytest.param(1, marks=pytest.mark.slow)])
def test_replay_finds_a_search_witness_counts_again(jobs):
    m = _leaky_sum()
    v = V.search(m, budget=100_000, alpha=1e-3, rng=3, float_events=True, jobs=jobs)
    w = v.witness
    assert v.violated and w.key != (0,) and w.chunked is (jobs is not None)
    row = v.row()
    again = V.replay(m, data_from_json(row["d1_json"]), data_from_json(row["d2_json"]),
                     event=Event.from_json(row["event_json"]), direction=row["direction"],
                     samples=row["cert_samples"], seed=int(row["witness_seed"]),
                     key=tuple(int(k) for k in row["witness_key"].split()), chunked=row["witness_chunked"])
    assert again.witness.counts == w.counts and again.witness.draws == w.draws
    # the stream key matters: the pair's draws, not a fresh one-pair audit's
    other = V.replay(m, w.d1, w.d2, event=w.event, direction=w.direction, samples=w.samples, seed=w.seed,
                     chunked=w.chunked)
    assert other.witness.counts != w.counts


def test_replay_refuses_a_direction_it_does_not_know():
    m = _leaky_sum()
    with pytest.raises(ValueError, match="direction must be 'd1>d2' or 'd2>d1'"):
        V.replay(m, [0.0], [0.0, 1.0], event=Event("le", hi=0.0), direction="up", samples=100, seed=1)


@pytest.mark.slow
def test_the_plugins_replay_line_of_a_search_failure_gives_the_same_counts():
    from dpharness import testing

    def leaky_sum(d, n, rng):
        return float(np.sum(d)) + rng.laplace(0.0, 1.0, n)

    with pytest.raises(testing.DPViolation) as info:
        testing.assert_dp(leaky_sum, epsilon=1.0, neighbours="add_remove", budget=100_000, alpha=1e-3, rng=3,
                          float_events=True, budget_scale=1.0)
    v = info.value.verdict
    call = str(info.value).splitlines()[-1].strip()
    assert call.startswith("verifiers.replay(mech, ") and f"key={tuple(v.witness.key)!r}" in call
    mech = V.wrap(leaky_sum, epsilon=1.0, neighbours="add_remove")
    again = eval(call, {"verifiers": V, "math": math, "mech": mech})
    assert again.witness.counts == v.witness.counts
