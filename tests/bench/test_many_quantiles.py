"""The ``many_quantiles`` kind (GJK21's experiments) and the rank-utility EM in real_data_medians."""

from __future__ import annotations

import copy
import importlib.util
import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from dpharness import mechanisms
from dpharness.bench.run import runner
from dpharness.bench.config import ConfigError, load_config
from dpharness.bench.experiments import many_quantiles as mq
from dpharness.bench.experiments.median_accuracy import order_statistic_truth
from dpharness.bench.run.outputs import TIMING_COLUMNS
from dpharness.bench.run.runner import run

ROOT = Path(__file__).resolve().parents[2]


def _figure_checks():
    """tests/bench/test_figures.py's readability checks (loaded from its file: tests is no package)."""
    spec = importlib.util.spec_from_file_location("_figure_checks", ROOT / "tests" / "bench" / "test_figures.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("_figure_checks", mod)
    spec.loader.exec_module(sys.modules["_figure_checks"])
    return sys.modules["_figure_checks"]


TINY = {
    "name": "tiny_mq",
    "experiment": "many_quantiles",
    "seed": 3,
    "data": [{"generator": "normal", "n": 200, "loc": 0, "scale": 5, "label": "normal"},
             {"generator": "uniform", "n": 200, "low": -5, "high": 5, "label": "uniform"}],
    "lower": -100,
    "upper": 100,
    "epsilon": 1,
    "m": [1, 3, 6],
    "trials": 4,
    "mechanisms": [
        {"label": "JointExp", "name": "joint_quantiles"},
        {"label": "IndExp", "name": "independent_quantiles", "composition": "basic"},
        {"label": "AppIndExp", "name": "independent_quantiles", "composition": "optimal"},
    ],
}


# -- the error and the truth against their definitions --------------------------------------------


def _brute_misclassified(x, truth, est):
    tot = 0
    for t, o in zip(truth, est):
        lo, hi = min(t, o), max(t, o)
        tot += sum(1 for v in x if lo < v < hi)
    return tot / len(truth)


def test_misclassified_points_match_the_brute_force_definition():
    rng = np.random.default_rng(0)
    for _ in range(200):
        n = int(rng.integers(1, 12))
        x = np.sort(rng.integers(-3, 4, size=n).astype(float))  # ties on purpose
        m = int(rng.integers(1, 5))
        qs = mq.levels(m)
        truth = mq.lower_quantiles(x, qs)
        # estimates on data points, between them and outside the data
        est = np.sort(np.concatenate([rng.choice(x, size=m // 2), rng.uniform(-5, 5, size=m - m // 2)]))
        got = mq.misclassified(x, truth, est[None, :])[0]
        assert got == pytest.approx(_brute_misclassified(x, truth, est), abs=1e-12)
    # a release equal to the truth misclassifies nothing, even on a tied value
    x = np.array([1.0, 2, 2, 2, 3])
    assert mq.misclassified(x, np.array([2.0]), np.array([[2.0]]))[0] == 0
    assert mq.misclassified(x, np.array([1.0]), np.array([[3.0]]))[0] == 3


def test_truth_is_the_lower_empirical_quantile_and_levels_are_evenly_spaced():
    assert mq.levels(3) == (0.25, 0.5, 0.75)
    rng = np.random.default_rng(1)
    for n in (1, 2, 7, 10, 999, 1000):
        x = np.sort(rng.normal(size=n))
        for m in (1, 4, 9, 29):
            qs = mq.levels(m)
            want = [order_statistic_truth(x, q, "lower") for q in qs]
            assert mq.lower_quantiles(x, qs).tolist() == want


def test_indexp_error_at_m1_matches_its_exact_law():
    # The exact mean of the misclassification error of one IndExp release (m = 1) from the exact
    # output law: on distinct data x_(1) < ... < x_(n) the release lies in piece j = [x_(j), x_(j+1)]
    # (x_(0) = lower, x_(n+1) = upper) with probability P_j, and then misclassifies
    # max(j - r, r - 1 - j, 0) points, r = ceil(q n). Monte Carlo mean of N draws vs the exact mean:
    # |diff| <= 5 sigma / sqrt(N), sigma the exact standard deviation (CLT; false alarm ~6e-7).
    rng = np.random.default_rng(2)
    x = np.sort(rng.normal(0, 5, size=60))
    mech = mechanisms.make("independent_quantiles", epsilon=1.0, lower=-100.0, upper=100.0, quantiles=[0.5])
    law = mech.marginal(x, 0)
    p = np.exp(law.log_mass)
    j = np.arange(p.size)
    r = math.ceil(0.5 * x.size)
    cnt = np.maximum(np.maximum(j - r, r - 1 - j), 0).astype(float)
    mean, sd = float(p @ cnt), math.sqrt(float(p @ cnt**2) - float(p @ cnt) ** 2)
    N = 20_000
    est = mech.sample(x, size=N, rng=np.random.default_rng(3))
    got = mq.misclassified(x, mq.lower_quantiles(x, [0.5]), est)
    assert abs(got.mean() - mean) <= 5 * sd / math.sqrt(N), (got.mean(), mean, sd)


# -- runs ----------------------------------------------------------------------------------------


def _csv_without_timing(run_dir: Path) -> str:
    df = pd.read_csv(run_dir / "results.csv", dtype=str, keep_default_na=False)
    return df.drop(columns=list(TIMING_COLUMNS)).to_csv(index=False)


def test_jobs_1_and_2_give_identical_results(tmp_path, monkeypatch):
    monkeypatch.setattr(runner, "PROBE_SECONDS", 0.0)  # really send chunks to the workers
    a = run(TINY, jobs=1, out=tmp_path / "a", progress=False, figures=False)
    b = run(TINY, jobs=2, out=tmp_path / "b", progress=False, figures=False)
    assert a.errors == b.errors == 0
    assert _csv_without_timing(a.run_dir) == _csv_without_timing(b.run_dir)
    res = a.results
    assert len(res) == 2 * 3 * 3 * 4
    # trial i uses the same dataset for every mechanism and m: the same n and, at m = 1, the same truth
    assert set(res["n"]) == {200}
    tab = pd.read_csv(a.run_dir / "table.csv")
    assert {"mean", "std", "se", "trials", "seconds_per_trial"} <= set(tab.columns)
    assert (tab["trials"] == 4).all()


@pytest.mark.slow
@pytest.mark.parametrize("name", ["gjk21_quantiles", "gjk21_real_data"])
def test_quick_tier_runs_and_draws_readable_figures(name, tmp_path):
    checks = _figure_checks()
    figs = checks._capture_run(ROOT / "configs" / f"{name}.yaml", tmp_path, quick=True)
    checks.assert_readable(figs)
    names = {f for f, _ in figs}
    run_dir = next((tmp_path / name).iterdir())
    assert names and all(n.startswith("error_vs_m_") for n in names)
    assert {p.name for p in (run_dir / "figures").iterdir()} == names
    text = (run_dir / "table.md").read_text(encoding="utf-8")
    assert "JointExp" in text and "IndExp" in text and "AppIndExp" in text


def test_shipped_gjk21_config_is_the_papers_setup():
    spec = load_config(ROOT / "configs" / "gjk21_quantiles.yaml").spec
    assert spec.m == tuple(range(1, 30)) and spec.trials >= 100 and spec.epsilon == (1.0,) and spec.delta == 1e-6
    assert {(d.name, d.n) for d in spec.data} == {("normal", 1000), ("uniform", 1000)}
    normal = next(d for d in spec.data if d.name == "normal")
    assert dict(normal.params)["scale"] == 5  # standard deviation 5 (dp_multiq base.gen_gaussian's stddev)
    assert (spec.lower, spec.upper, spec.neighbours) == (-100.0, 100.0, "replace_one")
    assert {c.check for c in spec.checks} == {"lower", "growth", "grows_slower"}
    quick = load_config(ROOT / "configs" / "gjk21_quantiles.yaml", quick=True).spec
    assert quick.m == (1, 5, 10, 20, 29) and quick.print_m == (1, 5, 10, 20, 29)


# -- bad configs ----------------------------------------------------------------------------------


def _err(**changes) -> str:
    raw = copy.deepcopy(TINY)
    for k, v in changes.items():
        raw[k] = v
    with pytest.raises(ConfigError) as e:
        load_config(raw)
    return str(e.value)


@pytest.mark.parametrize("changes, expected", [
    ({"trails": 3}, "trails: unknown key (did you mean 'trials'?); accepted: "),
    ({"neighbours": "swap"}, "neighbours: must be one of replace_one, add_remove; got 'swap'"),
    ({"m": [0, 3]}, "m[0]: must be"),
    ({"m": {"from": 5, "to": 2}}, "m.to: must be >= from (5), got 2"),
    ({"m": {"form": 1, "to": 2}}, "m.form: unknown key (did you mean 'from'?); accepted: from, to"),
    ({"print_m": [2]}, "print_m[0]: must be one of the m grid (1, 3, 6), got 2"),
    ({"delta": 2}, "delta: must be in (0, 1), got 2"),
    ({"mechanisms": [{"name": "duff_median"}]}, "mechanisms[0].name: duff_median has no quantiles parameter"),
    ({"mechanisms": [{"name": "joint_quantile"}]}, "mechanisms[0].name: unknown mechanism 'joint_quantile' (did you mean 'joint_quantiles'?)"),
    ({"mechanisms": [{"name": "joint_quantiles", "quantiles": [0.5]}]}, "mechanisms[0].quantiles: is not set per mechanism: it comes from m"),
    ({"mechanisms": [{"name": "independent_quantiles", "compositon": "basic"}]},
     "mechanisms[0].compositon: unknown parameter of independent_quantiles (did you mean 'composition'?); accepted: label, name, "),
    ({"mechanisms": [{"name": "independent_quantiles", "composition": "best"}]}, "mechanisms[0].composition: "),
    ({"reference": {"checks": [{"check": "lowest", "mechanism": "JointExp"}]}},
     "reference.checks[0].check: must be one of lower, growth, grows_slower; got 'lowest'"),
    ({"reference": {"checks": [{"check": "lower", "mechanism": "Joint", "than": "IndExp", "m_min": 3}]}},
     "reference.checks[0].mechanism: no mechanism labelled 'Joint'"),
    ({"reference": {"checks": [{"check": "growth", "mechanism": "IndExp", "from_m": 1, "to_m": 5, "min": 2}]}},
     "reference.checks[0].to_m: must be one of the m grid (1, 3, 6), got 5"),
])
def test_bad_config_keys_are_named_with_accepted_values(changes, expected):
    assert expected in _err(**changes)


# -- real_data_medians: the rank-utility EM beside Duff --------------------------------------------


def test_real_data_medians_runs_the_rank_utility_em_on_the_integers():
    spec = load_config(ROOT / "configs" / "real_data_medians.yaml", quick=True).spec
    rank = [m for m in spec.mechanisms if m.name == "independent_quantiles"]
    assert [m.label for m in rank] == ["rank EM (integers)"]
    mech = rank[0].build(spec, 0.1, 0.5, (0.0, 120.0))
    assert mech.quantiles == (0.5,) and mech.domain == "integers"
    duff = next(m for m in spec.mechanisms if m.label == "Duff (integers)").build(spec, 0.1, 0.5, (0.0, 120.0))
    # equal privacy: the same epsilon under the same neighbour relation as Duff
    assert (mech.claim.epsilon, mech.claim.neighbours) == (duff.claim.epsilon, duff.claim.neighbours) == (0.1, "add_remove")
    assert mech.claim.sensitivity == 0.5


def test_median_accuracy_refuses_quantiles_per_mechanism(tmp_path):
    raw = yaml.safe_load((ROOT / "configs" / "real_data_medians.yaml").read_text(encoding="utf-8"))
    raw["mechanisms"] = [{"name": "independent_quantiles", "quantiles": [0.5]}]
    with pytest.raises(ConfigError, match=r"mechanisms\[0\]\.quantiles: is not set per mechanism: it comes from the top-level q"):
        load_config(raw)
