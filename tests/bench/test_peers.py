"""One adapter per peer library: the benchmark and the audits use the very same sampler.

The peers extra is not installed in CI, so a tiny stand-in ``diffprivlib`` (same call signatures,
deterministic in ``random_state``) is put into ``sys.modules``: what is checked is our plumbing --
one build path, seeds drawn from our generator, a fresh accountant per call, the claims -- not
diffprivlib itself.
"""

from __future__ import annotations

import sys
import types

import numpy as np
import pytest

from dpharness.bench import peers


class _Accountant:
    made = 0

    def __init__(self):
        type(self).made += 1


def _fake_median(x, epsilon, bounds, random_state, accountant):
    assert isinstance(accountant, _Accountant)
    lo, hi = bounds
    return lo + (random_state % 1000) / 1000 * (hi - lo)


class _Selection:
    def __init__(self, epsilon, sensitivity, utility, random_state, monotonic):
        assert isinstance(utility, list)
        self.k, self.rng = len(utility), np.random.default_rng(random_state)

    def randomise(self):
        return int(self.rng.integers(self.k))


@pytest.fixture
def fake_diffprivlib(monkeypatch):
    pkg = types.ModuleType("diffprivlib")
    tools = types.ModuleType("diffprivlib.tools")
    tools.median = _fake_median
    acc = types.ModuleType("diffprivlib.accountant")
    acc.BudgetAccountant = _Accountant
    mechs = types.ModuleType("diffprivlib.mechanisms")
    mechs.Exponential = type("Exponential", (_Selection,), {})
    mechs.PermuteAndFlip = type("PermuteAndFlip", (_Selection,), {})
    for name, mod in (("diffprivlib", pkg), ("diffprivlib.tools", tools), ("diffprivlib.accountant", acc),
                      ("diffprivlib.mechanisms", mechs)):
        monkeypatch.setitem(sys.modules, name, mod)
    _Accountant.made = 0


def test_benchmark_and_audit_sample_the_same_median(fake_diffprivlib):
    impls, _ = peers.median_peers(0.0, 10.0, 1.0)
    (bench,) = [p for p in impls if p.name == "diffprivlib.tools.median"]
    audited = peers.build("diffprivlib_median", epsilon=1.0, lower=0.0, upper=10.0)
    x = np.array([1.0, 5.0, 7.0])
    a = bench.run(x, 6, np.random.default_rng(3))
    b = audited.sample(x, size=6, rng=np.random.default_rng(3))
    np.testing.assert_array_equal(a, b)
    assert _Accountant.made == 12  # a fresh accountant for every release, in both uses
    assert audited.claim.epsilon == 1.0 and audited.claim.neighbours == "add_remove"
    assert audited.lower == 0.0 and audited.upper == 10.0


def test_benchmark_and_audit_sample_the_same_selection(fake_diffprivlib):
    impls, skipped = peers.finite_peers(1.0, 1.0)
    names = {p.name for p in impls}
    assert {"diffprivlib.Exponential", "diffprivlib.PermuteAndFlip"} <= names
    bench = next(p for p in impls if p.name == "diffprivlib.Exponential")
    audited = peers.build("diffprivlib_exponential", epsilon=1.0)
    scores = np.array([0.0, 4.0, 1.0])
    np.testing.assert_array_equal(bench.run(scores, 20, np.random.default_rng(5)),
                                  audited.sample(scores, size=20, rng=np.random.default_rng(5)))
    assert audited.kind == "finite" and audited.claim.neighbours == "score_linf"
    assert peers.build("diffprivlib_exponential", monotonic=True).claim.neighbours == "score_monotone"
    # OpenDP: built when installed (the peers extra), else skipped with the reason; the rest is built
    # either way
    assert any(s.name == "opendp.make_noisy_max" for s in skipped) or "opendp.make_noisy_max" in names


def test_missing_libraries_are_summarised_in_one_line(monkeypatch):
    for mod in ("diffprivlib", "diffprivlib.tools", "diffprivlib.mechanisms", "diffprivlib.accountant", "opendp",
                "opendp.prelude", "pydp", "pydp.algorithms", "pydp.algorithms.laplacian"):
        monkeypatch.setitem(sys.modules, mod, None)
    monkeypatch.setattr(peers, "_version", lambda dist: None)
    _, med = peers.median_peers(0.0, 1.0, 1.0)
    _, fin = peers.finite_peers(1.0, 1.0)
    line = peers.missing_summary(med + fin)
    assert line.count(peers.INSTALL_HINT) == 1
    assert line.startswith("peer libraries not installed: diffprivlib, opendp, python-dp")
    assert peers.missing_summary([]) is None
    with pytest.raises(peers.PeerUnavailable, match="not installed"):
        peers.build("pydp_median")


def test_parameters_are_known_without_the_library():
    assert peers.parameters("opendp_quantile") == {"epsilon": 1.0, "lower": 0.0, "upper": 10.0, "step": 0.5}
    from dpharness.bench.peers import wrapped

    assert set(peers.AUDIT_PEERS) == set(wrapped.PEERS)
    with pytest.raises(ValueError, match="stepp.*accepted: epsilon, lower, upper, step"):
        peers.build("opendp_quantile", stepp=0.1)
    with pytest.raises(ValueError, match="accepted: diffprivlib_exponential"):
        peers.parameters("nope")


def test_opendp_grid_is_integer_multiples_of_the_step():
    from dpharness.bench.peers import opendp_

    assert opendp_.quantile_grid(0.0, 1.0, 0.25) == [0.0, 0.25, 0.5, 0.75, 1.0]
    g = opendp_.quantile_grid(-1.0, 1.0, 1e-3)
    assert len(g) == 2001 and g[0] == -1.0 and g[-1] == 1.0 and g[1000] == 0.0
