"""Event families as objects (verifiers.events.families): the registry, the event classes of every
family, ``events=`` as a set of families (the historical spellings map onto it bit-identically),
the mechanism's default set, and a family added from outside (the extension point)."""

from __future__ import annotations

import copy
import dataclasses
import pickle

import numpy as np
import pytest

from dpharness import verifiers
from dpharness.verifiers import events
from dpharness.verifiers.events import core, families
from dpharness.verifiers.events import shape as shape_family
from dpharness.verifiers.events.core import LabelEvent
from dpharness.verifiers.events.families import Family, register
from dpharness.verifiers.events.finite import row_candidates, set_candidates
from dpharness.verifiers.events.real import AtMost, Interval, NoAnswer
from dpharness.verifiers.statistical import batch as statistical
from dpharness.verifiers.controls import zoo

STANDARD = {"real", "intervals", "finite", "vector"}


def _lap(eps: float = 0.5, **kw):
    return verifiers.wrap(lambda d, n, rng: float(d) + rng.laplace(0, 1.0, size=n), epsilon=eps, neighbours="value",
                          name="lap", **kw)


def _same(a, b) -> bool:
    return (len(a) == len(b) and np.array_equal(a.c1, b.c1) and np.array_equal(a.c2, b.c2)
            and all(repr(a.event(i)) == repr(b.event(i)) and str(a.event(i)) == str(b.event(i)) for i in range(len(a))))


def _key(v):
    w = v.witness
    return (v.epsilon_lower, v.violated, v.calls, v.summary, str(w.event), w.direction, w.counts, w.selection_counts)


# -- the registry and the event classes --------------------------------------------------------

def test_every_family_module_registers_its_family_in_order():
    names = events.family_names()
    builtin = ("shape", "real", "intervals", "finite", "vector", "floats")
    assert tuple(n for n in names if n in builtin) == builtin  # other modules may add families
    fams = {f.name: f for f in events.registry()}
    assert fams["shape"].always and fams["shape"].exclusive
    assert fams["floats"].presets == () and fams["intervals"].presets == ("all",)
    assert set(fams["real"].presets) == {"all", "thresholds"}
    assert fams["finite"].laws == ("finite",) and fams["real"].laws == ("real",)
    assert {"le", "ge", "interval", "outside", "atom", "nan", "set", "pattern", "float", "shape"} <= set(events.KINDS)
    with pytest.raises(TypeError, match="Family"):
        register(object())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="already registered"):
        register(type("Other", (Family,), {"name": "real"})())
    with pytest.raises(ValueError, match="set of families"):
        register(type("All", (Family,), {"name": "all"})())


def test_event_builds_the_class_of_its_kind_and_keeps_its_value_semantics():
    e = events.Event("le", hi=1.0, coord=0)
    assert isinstance(e, AtMost) and isinstance(e, events.Event)
    assert repr(e) == "Event(kind='le', lo=-inf, hi=1.0, values=(), coord=0, projection=None)"
    assert e == events.Event("le", hi=1.0, coord=0) and hash(e) == hash(events.Event("le", hi=1.0, coord=0))
    assert e != events.Event("ge", lo=1.0, coord=0)
    assert pickle.loads(pickle.dumps(e)) == e and copy.deepcopy(e) == e
    assert isinstance(dataclasses.replace(e, hi=2.0), AtMost)
    assert str(e) == "{y[0] <= 1}" and e.describe() == "{y[0] <= 1}"
    assert isinstance(events.Event("nan"), NoAnswer) and isinstance(events.Event("interval", 0.0, 1.0), Interval)
    with pytest.raises(ValueError, match="event kind must be one of"):
        events.Event("nope")
    with pytest.raises(ValueError, match="AtMost"):
        AtMost("ge")
    with pytest.raises(dataclasses.FrozenInstanceError):
        e.hi = 3.0  # type: ignore[misc]


@pytest.mark.parametrize("kind, kw, y, mask, text", [
    ("ge", dict(lo=1.0), [0.0, 1.0, 2.0], [False, True, True], "{y >= 1}"),
    ("interval", dict(lo=0.5, hi=1.5), [0.0, 1.0, 2.0], [False, True, False], "{0.5 <= y <= 1.5}"),
    ("outside", dict(lo=0.5, hi=1.5), [0.0, 1.0, 2.0], [True, False, True], "{y < 0.5 or y > 1.5}"),
    ("atom", dict(lo=1.0, hi=1.0), [0.0, 1.0, 2.0], [False, True, False], "{y == 1}"),
    ("nan", {}, [0.0, np.nan], [False, True], "{y is NaN (no answer)}"),
    ("set", dict(values=("a", "c")), ["a", "b", "c"], [True, False, True], "{y in {'a', 'c'}}"),
    ("pattern", dict(values=((0, 1),)), [[1.0, np.nan], [np.nan, 1.0]], [True, False],
     "{answer pattern of y in {x-} (x answered, - no answer)}"),
    ("float", dict(values=((0, 1, 0),)), [1.0, 1.5, -1.0], [True, False, False],
     "{bits of y: +[2^0, 2^1), lowest set bit 2^0}"),
    ("shape", dict(values=((2,),)), [[1.0, 2.0]], [True], "{y is a row of 2 coordinates}"),
])
def test_each_event_class_contains_and_describes(kind, kw, y, mask, text):
    e = events.Event(kind, **kw)
    assert type(e) is events.event_class(kind)
    assert e.contains(np.array(y)).tolist() == mask and str(e) == text


# -- events= spellings --------------------------------------------------------------------------

def _draws():
    r = np.random.default_rng(0)
    a = r.laplace(0, 1, 400)
    a[::9] = np.nan
    yield "real", a, 0.5 + r.laplace(0, 1, 400), False
    yield "finite", r.integers(0, 5, 300), r.integers(0, 6, 300), True
    yield "rows", r.normal(size=(200, 3)), r.normal(0.3, size=(200, 3)), False
    yield "labels", r.integers(0, 2, (200, 4)), (r.random((200, 4)) < 0.7).astype(int), True


# the vector rows' case fits a learned projection per family set: seconds, so in the thorough tier
@pytest.mark.parametrize("name, y1, y2, finite", [pytest.param(*c, marks=pytest.mark.slow) if c[0] == "rows" and not c[3]
                                                  else c for c in _draws()])
def test_historical_spellings_are_sets_of_families(name, y1, y2, finite):
    for old, new in (("all", STANDARD), ("thresholds", STANDARD - {"intervals"})):
        for fl, extra in ((False, set()), (True, {"floats"})):
            a = statistical.candidates_for(y1, y2, finite, old, fl)
            b = statistical.candidates_for(y1, y2, finite, frozenset(new | extra))
            c = statistical.candidates_for(y1, y2, finite, sorted(new | extra))
            assert _same(a, b) and _same(a, c), (name, old, fl)


def test_single_families_give_only_their_events():
    r = np.random.default_rng(1)
    y1, y2 = r.laplace(0, 1, 300), 1.0 + r.laplace(0, 1, 300)
    for fam, want in (("intervals", {"interval", "outside"}), ("floats", {"float"}),
                      ("real", {"le", "ge", "atom"}), (("real", "intervals"), {"le", "ge", "interval", "outside", "atom"})):
        cand = statistical.candidates_for(y1, y2, False, fam)
        assert set(cand.kinds.tolist()) <= want and len(cand) > 0, fam
    # intervals alone are the intervals of the full list, in the same order
    full = statistical.candidates_for(y1, y2, False, {"real", "intervals"})
    only = statistical.candidates_for(y1, y2, False, "intervals")
    sel = np.isin(full.kinds, ["interval", "outside"])
    assert np.array_equal(full.c1[sel], only.c1) and np.array_equal(full.lo[sel], only.lo)


def test_audit_and_search_accept_family_sets_with_identical_results():
    lap = _lap()
    base = verifiers.audit(lap, 0.0, 1.0, samples=4000, rng=1)
    assert _key(base) == _key(verifiers.audit(lap, 0.0, 1.0, samples=4000, rng=1, events="all"))
    assert _key(base) == _key(verifiers.audit(lap, 0.0, 1.0, samples=4000, rng=1, events=STANDARD))
    thr = verifiers.audit(lap, 0.0, 1.0, samples=4000, rng=2, events="thresholds", float_events=True)
    assert _key(thr) == _key(verifiers.audit(lap, 0.0, 1.0, samples=4000, rng=2,
                                             events={"real", "finite", "vector", "floats"}))
    seq = verifiers.audit(lap, 0.0, 1.0, samples=4000, rng=3, sequential=True, float_events=True)
    assert _key(seq) == _key(verifiers.audit(lap, 0.0, 1.0, samples=4000, rng=3, sequential=True,
                                             events={"all", "floats"}))
    s = verifiers.search(lap, budget=8000, rng=4)
    assert _key(s) == _key(verifiers.search(lap, budget=8000, rng=4, events="all"))
    s_fl = verifiers.search(lap, budget=8000, rng=4, float_events=True)
    assert _key(s_fl) == _key(verifiers.search(lap, budget=8000, rng=4, events=STANDARD | {"floats"}))
    only = verifiers.audit(lap, 0.0, 1.0, samples=4000, rng=5, events="real")
    assert only.witness.event.kind in ("le", "ge", "atom", "nan")


@pytest.mark.parametrize("bad", ["some", "", set(), ["real", 3], {"real": 1}, 7, ("all", "nope")])
def test_invalid_events_name_the_argument_and_the_families(bad):
    for call in (lambda: verifiers.audit(_lap(), 0.0, 1.0, samples=100, events=bad),
                 lambda: verifiers.search(_lap(), budget=1000, events=bad)):
        with pytest.raises(ValueError, match="events") as e:
            call()
        assert "'real'" in str(e.value) and "'floats'" in str(e.value) and "'thresholds'" in str(e.value)
    with pytest.raises(TypeError, match="float_events"):
        verifiers.search(_lap(), budget=1000, float_events="yes")


def test_families_that_do_not_read_the_outputs_are_refused_by_name():
    rr = zoo.make("em_missing_half")
    w = rr.witness()
    with pytest.raises(ValueError, match="events: the families floats, shape give no candidate event for finite"):
        verifiers.audit(rr, w.d1, w.d2, samples=400, rng=1, events="floats")


# -- the mechanism's default set ------------------------------------------------------------------

def test_the_mechanism_default_set_is_an_attribute():
    plain, lib = _lap(), _lap(float_events=True)
    assert plain.event_families == frozenset(STANDARD | {"shape"})
    assert lib.event_families == frozenset(STANDARD | {"shape", "floats"})
    assert events.resolve_events(lib) == lib.event_families
    assert events.resolve_events(lib, "thresholds") == frozenset(STANDARD - {"intervals"} | {"shape", "floats"})
    assert events.resolve_events(lib, "thresholds", float_events=False) == frozenset(STANDARD - {"intervals"} | {"shape"})
    assert events.resolve_events(plain, "real") == frozenset({"real", "shape"})
    assert statistical.resolve_float_events(lib, None) is True and statistical.resolve_float_events(plain, None) is False

    class Own:  # any mechanism may declare its own default set
        claim = plain.claim
        kind = "real"
        event_families = {"real"}

        def sample(self, data, size=None, rng=None):
            return plain.sample(data, size, rng)

    v = verifiers.audit(Own(), 0.0, 1.0, samples=4000, rng=1)
    assert v.witness.event.kind in ("le", "ge", "atom", "nan")
    assert _key(v) == _key(verifiers.audit(plain, 0.0, 1.0, samples=4000, rng=1, events="real"))
    Own.event_families = "bogus"
    with pytest.raises(ValueError, match="event_families"):
        verifiers.audit(Own(), 0.0, 1.0, samples=400, rng=1)


# -- a family added from outside: one module, registered on import ---------------------------------

def test_a_new_family_needs_only_its_module(monkeypatch):
    # what a module verifiers/events/parity.py would hold; the registries are restored afterwards
    monkeypatch.setattr(core, "_CLASSES", dict(core._CLASSES))
    monkeypatch.setattr(families, "_FAMILIES", dict(families._FAMILIES))

    class ParityIs(LabelEvent):
        """{floor(y) mod 2 in values}."""

        kinds = ("parity",)

        def contains(self, y):
            return np.isin(np.floor(np.asarray(y, dtype=np.float64)) % 2, self.values)

        def describe(self):
            return "{floor(y) is " + " or ".join("even" if v == 0 else "odd" for v in self.values) + "}"

    class Parity(Family):
        name = "parity"
        order = 50
        laws = ("real",)
        presets = ()  # opt-in: only when named

        def candidates(self, d):
            if d.rows:
                return []
            p1, p2 = np.floor(d.y1) % 2, np.floor(d.y2) % 2
            n1 = np.array([np.sum(p1 == 0), np.sum(p1 == 1)])
            n2 = np.array([np.sum(p2 == 0), np.sum(p2 == 1)])
            return [set_candidates(n1, n2, [0.0, 1.0], kind="parity")]

    register(Parity())
    # a release whose parity is its input: a support violation, searched here with this family alone
    m = verifiers.wrap(lambda d, n, rng: 2.0 * np.round(rng.laplace(0, 3.0, size=n)) + d, epsilon=1.0,
                       neighbours="value")
    v = verifiers.audit(m, 0.0, 1.0, samples=2000, rng=1, events="parity")
    assert isinstance(v.witness.event, ParityIs) and v.violated and v.support_violation
    assert str(v.witness.event) in ("{floor(y) is even}", "{floor(y) is odd}")
    assert "parity" not in events.resolve_events(m, "all")  # opt-in
    with pytest.raises(ValueError, match="'parity'"):
        verifiers.audit(m, 0.0, 1.0, samples=100, events="parityy")


def test_shapes_that_differ_leave_only_the_shape_candidates():
    y1, y2 = np.zeros((5, 2)), np.zeros((7, 3))
    cand = statistical.candidates_for(y1, y2, False, "real")
    assert cand.kinds.tolist() == ["shape", "shape"] and cand.c1.tolist() == [5, 0] and cand.c2.tolist() == [0, 7]
    assert isinstance(cand.event(0), shape_family.ShapeIs) and cand.event(1).contains(y2).all()


def _largest_support_union(c):
    """Hits of the largest union of two or more labels seen under one dataset only."""
    multi = np.array([len(s) > 1 for s in c.sets])
    best = 0
    for num, den in ((c.c1, c.c2), (c.c2, c.c1)):
        m = multi & (den == 0)
        if m.any():
            best = max(best, int(num[m].max()))
    return best


@pytest.mark.parametrize("seed", range(5))
def test_label_row_unions_are_not_support_events_the_sorting_made(seed):
    """Equal laws over 1,024 label rows, 3,333 draws each (a search's first round on ten answers).
    Ranked on the draws that count them, the rows seen under one dataset only lead, and their union
    holds about 1024 * 3.26 * exp(-3.26) = 125 hits with none under the other dataset: a "support
    event" made by the sorting (87-135 hits on these seeds). Ranked on every other draw, a
    zero-count prefix ends at the first row the other half saw under both datasets (each leading
    row does with probability about 0.8), so it stays short: 0-21 hits on these seeds. 50 sits
    between the two."""
    rng = np.random.default_rng(seed)
    y1 = rng.integers(0, 2, size=(3333, 10))
    y2 = rng.integers(0, 2, size=(3333, 10))
    assert _largest_support_union(row_candidates(y1, y2, "set")) < 50
    # the same counts ranked on all the draws: the sorting's support union is there
    code = np.concatenate([y1, y2]) @ (2 ** np.arange(10))
    vals, inv = np.unique(code, return_inverse=True)
    n1 = np.bincount(inv[:3333], minlength=vals.size)
    n2 = np.bincount(inv[3333:], minlength=vals.size)
    assert _largest_support_union(set_candidates(n1, n2, list(vals))) > 50
