"""Neighbour relations for real implementations: records as rows (2-D arrays, DataFrames),
NaN-equal records, the ``local`` relation over a declared input domain, and generators that keep
to the domain (docs/auditing.md, "Neighbour relations and pair generators").

Statistical cases use fixed seeds; a "not flagged" case relies on the search's certified bound
holding at level alpha = 0.05 (a false alarm has probability <= 0.05 by construction, and the
seed is fixed), a "flagged" case on a true epsilon far enough above the claim that the budget
detects it (the margins are stated at each case).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpharness import verifiers as V
from dpharness.mechanisms import NEIGHBOURS, PrivacyClaim
from dpharness.verifiers.relations.row_pairs import MAX_ROW_PAIRS
from dpharness.verifiers.input_domains import BitVectors, FiniteValues, Interval, parse_domain

AR = PrivacyClaim(1.0, neighbours="add_remove")
RO = PrivacyClaim(1.0, neighbours="replace_one")
ROWS = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])


# -- legality: rows, DataFrames, NaN ----------------------------------------------------------

def test_rows_add_remove_and_replace_one():
    assert V.are_neighbours(ROWS, ROWS[:2], AR) and V.are_neighbours(ROWS[[2, 0]], ROWS, AR)  # order is free
    assert not V.are_neighbours(ROWS, ROWS[:1], AR)  # two rows removed
    assert not V.are_neighbours(ROWS, ROWS[:2] + 1, AR)  # sizes fit, rows do not
    assert V.are_neighbours(np.zeros((0, 2)), ROWS[:1], AR) and V.are_neighbours([], ROWS[:1], AR)  # from nothing
    changed = ROWS.copy()
    changed[1, 0] = 9.0  # one cell of one record
    assert V.are_neighbours(ROWS, changed, RO) and V.are_neighbours(ROWS, ROWS, RO)
    assert not V.are_neighbours(ROWS, ROWS + 1, RO)
    # a row is one record: moving cells between rows changes two records
    swapped = np.array([[1.0, 4.0], [3.0, 2.0], [5.0, 6.0]])
    assert not V.are_neighbours(ROWS, swapped, RO)
    with pytest.raises(ValueError, match="records of d1 are rows of 2 but records of d2 are scalars"):
        V.check_neighbours(ROWS, np.array([1.0, 2.0]), AR)
    with pytest.raises(ValueError, match=r"2-D array \(one record per row\).*shape \(2, 2, 2\)"):
        V.check_neighbours(np.zeros((2, 2, 2)), ROWS, AR)
    # 1-D records as before
    assert V.are_neighbours([1, 2], [1, 2, 3], AR) and not V.are_neighbours([1, 2], [3, 4], RO)


def test_dataframes_compare_rows_by_column_name():
    df = pd.DataFrame({"age": [30, 41, 52], "city": ["a", "b", "a"], "x": [0.5, np.nan, 1.0]})
    assert V.are_neighbours(df, df.iloc[1:], AR) and V.are_neighbours(df, df.iloc[[2, 0]], AR)
    assert V.are_neighbours(df, df[["x", "city", "age"]].iloc[:2], AR)  # other column order, by name
    other = df.copy()
    other.loc[1, "city"] = "z"
    assert V.are_neighbours(df, other, RO)
    other.loc[0, "age"] = 99
    assert not V.are_neighbours(df, other, RO)
    with pytest.raises(ValueError, match=r"different columns: \['age', 'city', 'x'\] and \['age', 'town', 'x'\]"):
        V.check_neighbours(df, df.rename(columns={"city": "town"}), RO)
    # a DataFrame and an array: by position
    num = pd.DataFrame(ROWS, columns=["u", "v"])
    assert V.are_neighbours(num, ROWS[:2], AR)


def test_nan_records_equal_nan_records():
    # before: Counter saw every NaN as a new record, so these legal pairs were refused
    a = np.array([np.nan, 1.0, 2.0])
    assert V.are_neighbours(a, np.array([1.0, np.nan, 3.0]), RO)
    assert V.are_neighbours(a, a[:2], AR) and V.are_neighbours(a, np.append(a, np.nan), AR)
    assert not V.are_neighbours(a, np.array([np.nan, np.nan, 3.0]), RO)  # two records differ
    r = np.array([[np.nan, 1.0], [2.0, np.nan], [3.0, 3.0]])
    assert V.are_neighbours(r, r[[1, 0]], AR)
    assert V.are_neighbours(r, np.array([[np.nan, 1.0], [2.0, np.nan], [7.0, 7.0]]), RO)
    # a NaN cell equals a NaN cell of the same column only
    assert not V.are_neighbours(r, np.array([[1.0, np.nan], [2.0, np.nan], [7.0, 7.0]]), RO)
    df = pd.DataFrame({"k": ["a", None, "c"], "v": [np.nan, 1.0, np.nan]})
    assert V.are_neighbours(df, df.iloc[[0, 1]], AR) and V.are_neighbours(df, df.iloc[::-1], RO)


def test_multiset_comparison_is_linear():
    # 5 * 10^4 shuffled rows with NaN cells: a pairwise match would take ~10^9 comparisons
    rng = np.random.default_rng(0)
    x = rng.integers(0, 50, size=(50_000, 3)).astype(float)
    x[rng.random(x.shape) < 0.01] = np.nan
    y = x[rng.permutation(x.shape[0])][1:]
    assert V.are_neighbours(x, y, AR)
    z = y.copy()
    z[0, 0] = 1e9
    assert not V.are_neighbours(x, z, AR)


# -- input domains -----------------------------------------------------------------------------

def test_domain_specs_and_membership():
    assert parse_domain(["a", "b"]) == FiniteValues(("a", "b")) == parse_domain({"values": ("a", "b")})
    assert parse_domain({"bits": 4}) == BitVectors(4) and parse_domain({"interval": [0, 1]}) == Interval(0.0, 1.0)
    assert parse_domain(None) is None and parse_domain(BitVectors(2)) == BitVectors(2)
    cats = FiniteValues(("a", "b", np.nan))
    assert cats.contains("a") and cats.contains(np.str_("b")) and cats.contains(float("nan")) and not cats.contains("z")
    assert not cats.contains([1, 2])  # unhashable-looking input is simply not a member
    bits = BitVectors(3)
    assert bits.contains([0, 1, 1]) and not bits.contains([0, 2, 1]) and not bits.contains([0, 1])
    np.testing.assert_array_equal(bits.contains_each(np.array([[0, 1, 0], [1, 1, 4]])), [True, False])
    iv = Interval(0, 1)
    assert iv.contains(0.0) and iv.contains(1) and not iv.contains(1.5) and not iv.contains(np.nan)
    np.testing.assert_array_equal(iv.contains_each(np.array([0.2, 3.0])), [True, False])
    hash(PrivacyClaim(1.0, neighbours="local", input_domain=cats))  # a claim stays hashable
    for bad, err, msg in ((["a", "a"], ValueError, "distinct"), ([], ValueError, "empty"),
                          ({"bits": 0}, ValueError, "integer >= 1"), ({"interval": [1, 0]}, ValueError, "lo < hi"),
                          ({"interval": [0]}, ValueError, r"\[lo, hi\]"), ({"range": 3}, ValueError, "unknown key"),
                          ("abc", ValueError, "list or tuple of values"), ([{"a": 1}], TypeError, "hashable")):
        with pytest.raises(err, match=msg):
            parse_domain(bad)


def test_local_relation_legality():
    assert "local" in NEIGHBOURS
    claim = PrivacyClaim(1.0, neighbours="local", input_domain=FiniteValues(("a", "b", "c")))
    assert V.are_neighbours("a", "c", claim) and V.are_neighbours("b", "b", claim)
    with pytest.raises(ValueError, match=r"not local neighbours: d2='z' is not in the input domain \{'a', 'b', 'c'\}"):
        V.check_neighbours("a", "z", claim)
    with pytest.raises(ValueError, match="d1=.*is not in the input domain"):
        V.check_neighbours("q", "a", claim)
    bits = PrivacyClaim(1.0, neighbours="local", input_domain=BitVectors(3))
    assert V.are_neighbours([0, 0, 0], [1, 1, 1], bits) and not V.are_neighbours([0, 0, 0], [1, 1], bits)
    assert V.are_neighbours(0.1, 55.0, PrivacyClaim(1.0, neighbours="local"))  # no domain: unrestricted
    assert "input domain {0,1}^3" in str(bits)
    # other relations: every record (record relations) or the whole input must lie in the domain
    rec = PrivacyClaim(1.0, neighbours="add_remove", input_domain=Interval(0, 1))
    assert V.are_neighbours([0.2, 0.4], [0.2], rec)
    with pytest.raises(ValueError, match=r"record 1 of d2 \(2.0\) is not in the input domain \[0, 1\]"):
        V.check_neighbours([0.2], [0.2, 2.0], rec)
    with pytest.raises(TypeError, match="input_domain must be an input domain"):
        PrivacyClaim(1.0, neighbours="local", input_domain=["a", "b"])  # specs are parsed by wrap


# -- mechanisms: rows audited without hand encoding ----------------------------------------------

def _sum_col0(clip: bool):
    """Noisy sum of column 0: Laplace(1) noise, epsilon = 1 under add_remove / replace_one when
    column 0 is clipped to [0, 1] (sensitivity 1, Dwork et al. 2006); unclipped, a row at 2 (the
    generator's row beyond the bounds) moves the sum by 2: true epsilon 2."""
    def fn(d, n, rng):
        a = d.to_numpy(dtype=float) if isinstance(d, pd.DataFrame) else np.asarray(d, dtype=float).reshape(-1, 3)
        x = np.clip(a[:, 0], 0.0, 1.0) if clip else a[:, 0]
        return x.sum() + rng.laplace(scale=1.0, size=n)
    return fn


def test_row_records_generator():
    m = V.wrap(_sum_col0(True), epsilon=1.0, neighbours="add_remove", attributes={"lower": [0, 0, 0], "upper": [1, 1, 1]})
    pairs = V.pairs_for(m)
    assert 10 <= len(pairs) <= MAX_ROW_PAIRS
    assert all(np.asarray(p.d1).ndim == 2 and np.asarray(p.d1).shape[1] == 3 for p in pairs)
    labels = " | ".join(p.label for p in pairs)
    for want in ("no records; add a row at the upper bounds", "add a row beyond the upper bounds", "remove the first row",
                 "add a row at the centre"):
        assert want in labels
    ro = V.wrap(_sum_col0(True), epsilon=1.0, neighbours="replace_one",
                attributes={"lower": [0, 0, 0], "upper": [1, 1, 1], "columns": ["a", "b", "c"]})
    rp = V.pairs_for(ro)
    assert rp and all(isinstance(p.d1, pd.DataFrame) and list(p.d2.columns) == ["a", "b", "c"] for p in rp)
    assert len(rp) <= MAX_ROW_PAIRS and any("replace middle row -> beyond" in p.label for p in rp)


class _FrameCount:
    """A mechanism class whose example data is a DataFrame (ints, strings, floats): the records
    generator must hand it DataFrames with the example's columns and dtypes."""

    def __init__(self, relation: str) -> None:
        self.claim = PrivacyClaim(1.0, neighbours=relation)

    @classmethod
    def example(cls):
        i = np.arange(100)
        return cls("add_remove"), pd.DataFrame({"age": i % 70 + 18, "city": np.array(list("wxyz"))[i % 4],
                                                "income": np.linspace(0.0, 1e5, 100)})

    def sample(self, data, size=None, rng=None):
        if not isinstance(data, pd.DataFrame) or list(data.columns) != ["age", "city", "income"]:
            raise RuntimeError(f"not the example's DataFrame: {type(data).__name__}")
        return np.full(size, float(len(data)))


@pytest.mark.parametrize("relation", ["add_remove", "replace_one"])
def test_dataframe_example_gives_dataframe_pairs(relation):
    m = _FrameCount(relation)
    pairs = V.pairs_for(m)
    assert 10 <= len(pairs) <= MAX_ROW_PAIRS and not pairs.skipped
    assert all(p.d2["age"].dtype == np.int64 and p.d2["income"].dtype == np.float64 for p in pairs)
    assert all(V.are_neighbours(p.d1, p.d2, m.claim) for p in pairs)
    # the example itself is a base: one of its 100 rows changed (replace_one) or one row added
    ex = [p for p in pairs if p.label.startswith("example rows")]
    assert len(ex) >= 4 and all(len(p.d1) == 100 for p in ex)
    # categorical column: its first / last / middle distinct values, never a new category
    assert set().union(*(set(p.d2["city"]) for p in pairs)) <= set("wxyz")


@pytest.mark.parametrize("relation", ["add_remove", "replace_one"])
def test_row_mechanism_searched_over_generated_rows(relation):
    # budget 2e5: for the unclipped sum the winning pair (a row at 0 vs 2) has true epsilon 2, and
    # the certified bound at this budget lands within ~0.05 of it (measured 1.97-1.99), far above 1
    attrs = {"lower": [0, 0, 0], "upper": [1, 1, 1]}
    ok = V.search(V.wrap(_sum_col0(True), epsilon=1.0, neighbours=relation, attributes=attrs), budget=200_000, rng=5)
    assert not ok.violated and ok.epsilon_lower <= 1.0
    bad = V.search(V.wrap(_sum_col0(False), epsilon=1.0, neighbours=relation, attributes=attrs), budget=200_000, rng=5)
    assert bad.violated and bad.epsilon_lower > 1.5 and "beyond the upper bounds" in bad.witness.pair_label


def test_nan_under_one_dataset_only_is_a_support_violation():
    """Mean of records in [0, 1] + Laplace(1): moving the mean by at most 1 per added record, so
    epsilon 1 holds between non-empty datasets; the empty dataset releases NaN, which no other
    dataset can -- a support violation the generated empty-dataset pairs expose."""
    def mean(d, n, rng):
        x = np.clip(np.asarray(d, dtype=float), 0.0, 1.0)
        with np.errstate(invalid="ignore", divide="ignore"):
            m = np.float64(x.sum()) / np.float64(x.size)  # NaN for no records, as numpy's mean
        return m + rng.laplace(scale=1.0, size=n)

    mech = V.wrap(mean, epsilon=1.0, neighbours="add_remove", attributes={"lower": 0.0, "upper": 1.0})
    assert any(np.asarray(p.d1).size == 0 for p in V.pairs_for(mech))
    v = V.search(mech, budget=100_000, rng=2)
    assert v.violated and v.support_violation
    assert np.asarray(v.witness.d1).size + np.asarray(v.witness.d2).size == 1  # empty vs one record
    assert "NaN" in str(v.witness.event)
    a = V.audit(mech, np.array([]), np.array([0.5]), samples=5_000, rng=1)
    assert a.violated and a.support_violation


# -- local DP ---------------------------------------------------------------------------------------

CATS = np.array(["a", "b", "c", "d"])


def _rr(eps: float, bias: float = 0.0):
    """k-ary randomized response (Warner 1965; Kairouz et al. 2016): the true category with
    probability e^eps / (e^eps + k - 1), each other one with 1 / (e^eps + k - 1): exactly eps-LDP.
    ``bias`` > 0 adds mass to "a" when the input is "a" and renormalises: at eps = 1, bias = 0.15,
    P[b | b] = 0.4754 vs P[b | a] = 0.1749 / 1.15 = 0.1521, a true epsilon of ln(3.126) = 1.14."""
    k = CATS.size
    p_true = np.exp(eps) / (np.exp(eps) + k - 1)

    def fn(x, n, rng):
        i = int(np.flatnonzero(CATS == x)[0])
        p = np.full(k, (1.0 - p_true) / (k - 1))
        p[i] = p_true
        if bias and i == 0:
            p[0] += bias
            p /= p.sum()
        return CATS[rng.choice(k, size=n, p=p)]
    return fn


def test_randomized_response_over_categories():
    exact = V.wrap(_rr(1.0), epsilon=1.0, neighbours="local", kind="finite", input_domain=["a", "b", "c", "d"])
    assert exact.input_domain == FiniteValues(("a", "b", "c", "d")) and exact.claim.input_domain == exact.input_domain
    pairs = V.pairs_for(exact)
    assert len(pairs) == 6 and {(p.d1, p.d2) for p in pairs} == {(a, b) for i, a in enumerate(CATS) for b in CATS[i + 1:]}
    v = V.search(exact, budget=200_000, rng=3)
    assert not v.violated and 0.9 < v.epsilon_lower <= 1.0  # tight: the claim is exact
    # true epsilon 1.14; certified bounds at this budget measured 1.11-1.14 over seeds 3-8
    biased = V.wrap(_rr(1.0, bias=0.15), epsilon=1.0, neighbours="local", kind="finite", input_domain=["a", "b", "c", "d"])
    b = V.search(biased, budget=200_000, rng=3)
    assert b.violated and "a" in (b.witness.d1, b.witness.d2)  # the leak involves the biased input
    assert V.audit(biased, "a", "c", samples=100_000, rng=4).violated


def _bit_rr(x, n, rng):
    """Bitwise randomized response on a 0/1 vector (RAPPOR's permanent step, Erlingsson et al.
    2014): it refuses anything but a bit vector, as shipped code would assert."""
    x = np.asarray(x, dtype=float)
    if not np.all((x == 0) | (x == 1)):
        raise RuntimeError(f"not a bit vector: {x}")  # not ValueError: a generator bug must surface
    keep = np.exp(0.25) / (1 + np.exp(0.25))
    flip = rng.random((n, x.size)) > keep
    return np.where(flip, 1 - x, x).sum(axis=1)


@pytest.mark.parametrize("relation", ["one_differ", "local"])
def test_bit_vector_pairs_stay_in_the_domain(relation):
    m = V.wrap(_bit_rr, epsilon=0.25 * 6, neighbours=relation, input_domain={"bits": 6})
    for gen in ("auto", "histograms", "local"):
        pairs = V.pairs_for(m, gen)
        assert pairs and not pairs.skipped, gen
        for p in pairs:
            for d in (p.d1, p.d2):
                assert np.asarray(d).shape == (6,) and np.isin(np.asarray(d), [0.0, 1.0]).all(), (gen, p.label)
    if relation == "local":
        got = {p.label for p in V.pairs_for(m)}
        assert {"all zeros vs all ones", "all zeros vs one-hot at the first bit", "all ones vs the last bit flipped",
                "first half ones vs second half ones"} <= got
    # without the domain, one_differ feeds a 2 (or a -1) into the bit vector: that is what the domain prevents
    free = V.wrap(_bit_rr, epsilon=1.5, neighbours="one_differ", attributes={"length": 6})
    assert V.pairs_for(free).skipped


def test_generators_keep_to_the_domain():
    iv = V.wrap(lambda d, n, r: np.zeros(n), epsilon=1.0, neighbours="add_remove", input_domain={"interval": [0, 3]})
    pr = V.pairs_for(iv)
    assert pr and all(np.all((np.asarray(d) >= 0) & (np.asarray(d) <= 3)) for p in pr for d in (p.d1, p.d2))
    cats = V.wrap(lambda d, n, r: np.zeros(n), epsilon=1.0, neighbours="replace_one", input_domain=["x", "y", "z"])
    pc = V.pairs_for(cats)
    assert pc and all(set(np.asarray(d).tolist()) <= {"x", "y", "z"} for p in pc for d in (p.d1, p.d2))
    assert all(not np.array_equal(p.d1, p.d2) for p in pc)
    val = V.wrap(lambda d, n, r: np.zeros(n), epsilon=1.0, neighbours="value", input_domain={"interval": [2, 5]})
    pv = V.pairs_for(val)
    assert pv and all(2 <= x <= 5 for p in pv for x in (p.d1, p.d2))
    rows = V.wrap(lambda d, n, r: np.zeros(n), epsilon=1.0, neighbours="add_remove", input_domain={"bits": 3})
    prow = V.pairs_for(rows)
    assert prow and all(np.asarray(d).reshape(-1, 3).shape[1] == 3 and np.isin(d, [0, 1]).all()
                        for p in prow for d in (p.d1, p.d2))
    nothing = V.wrap(lambda d, n, r: np.zeros(n), epsilon=1.0, neighbours="bit", input_domain=["x", "y"])
    with pytest.raises(ValueError, match=r"generator 'bits' produced no pair inside the input domain \{'x', 'y'\}"):
        V.pairs_for(nothing)
    with pytest.raises(ValueError, match="local generator needs an input domain"):
        V.pairs_for(V.wrap(lambda d, n, r: np.zeros(n), epsilon=1.0, neighbours="local"))


def test_finite_domain_local_pairs_cap():
    dom = FiniteValues(tuple(range(50)))
    pairs = dom.local_pairs()
    assert len(pairs) == 20 * 19 // 2  # a spread subset of 20 values, first and last included
    assert (0, 49) in {(a, b) for a, b, _ in pairs}
    interval = {(a, b) for a, b, _ in Interval(0, 4).local_pairs()}
    assert (0.0, 4.0) in interval and (0.0, 2.0) in interval
