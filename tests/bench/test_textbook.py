"""The textbook experiments (pumpkin, randomized response, Laplace from EM, private mode):
every config runs in quick mode through the runner, and their exact ingredients match
definitional twins."""

import math
from pathlib import Path

import numpy as np
import pytest

from dpharness.bench.config import ConfigError, load_config
from dpharness.bench.experiments import _textbook, private_mode, randomized_response
from dpharness.bench.run.runner import run

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = {
    "pumpkin": ["revenue_curve.png", "price_density.png", "price_histogram.png", "revenue_loss.png"],
    "randomized_response": ["p_truth.png", "privacy_loss.png"],
    "laplace_from_exponential": ["laplace_histograms.png", "privacy_loss.png", "log_ratio.png"],
    "private_mode": ["category_counts.png", "frequencies_eps0.05.png", "utility_loss.png", "p_mode.png"],
}


@pytest.mark.statistical
@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_config_runs_in_quick_mode(name, tmp_path):
    # exit code 0 needs every task ok AND every Monte Carlo estimate consistent with its exact
    # value (each kind's checks: false-alarm 1e-6 in total, Bonferroni; fixed seed in the config)
    res = run(ROOT / "configs" / f"{name}.yaml", quick=True, out=tmp_path, progress=False)
    assert res.errors == 0, res.results.loc[res.results["status"] != "ok", "message"].tolist()
    assert res.summary.ok, res.summary.text
    assert res.exit_code == 0
    for fig in CONFIGS[name]:
        f = res.run_dir / "figures" / fig
        assert f.is_file() and f.stat().st_size > 10_000, fig  # a real PNG, not an empty canvas
    assert (res.run_dir / "table.csv").is_file()
    assert len(res.summary.table) > 0


def test_pumpkin_table_reports_exact_losses(tmp_path):
    res = run(ROOT / "configs" / "pumpkin.yaml", quick=True, out=tmp_path, progress=False)
    t = res.summary.table.set_index("epsilon")
    # closed form per piece, cross-checked against quadrature in test_continuous.py
    assert t.loc[1.0, "exact_mean_loss"] == pytest.approx(2.128631529713885, rel=1e-10)
    assert t.loc[5.0, "exact_mean_loss"] == pytest.approx(1.607441245995111, rel=1e-10)
    # the exact loss decreases with epsilon
    assert np.all(np.diff(t["exact_mean_loss"].to_numpy()) < 0)


def test_randomized_response_exact_probabilities_are_the_textbook_formulas():
    for eps in (0.1, 1.0, 4.0):
        for bit in (0, 1):
            rr = randomized_response.exact_p_truth("randomized_response", eps, bit)
            em = randomized_response.exact_p_truth("exponential", eps, bit)
            assert rr == pytest.approx(math.exp(eps) / (1 + math.exp(eps)), rel=1e-13)
            assert em == pytest.approx(math.exp(eps / 2) / (1 + math.exp(eps / 2)), rel=1e-13)
        assert randomized_response.exact_loss("randomized_response", eps) == pytest.approx(eps, rel=1e-12)
        assert randomized_response.exact_loss("exponential", eps) == pytest.approx(eps / 2, rel=1e-12)


def test_randomized_response_ships_the_shfl_notebook_example_beside_ours(tmp_path):
    # Sherpa.ai's shfl notebook: scores (0, 1/4) for r = (0, 1), Delta_u = 1, eps = 10 -> P = 0.777.
    # Definitional twin: exp(eps u / (2 Delta_u)) normalised over the two answers.
    spec = load_config(ROOT / "configs" / "randomized_response.yaml").spec
    nb = spec.notebook
    assert nb is not None and nb.scores == (0.0, 0.25) and nb.sensitivity == 1 and nb.epsilon == 10
    w = math.exp(10 * 0.25 / 2)
    assert nb.exact_p1() == pytest.approx(w / (1 + w), rel=1e-13)
    assert round(nb.exact_p1(), 3) == nb.published == 0.777 and nb.decimals == 3
    res = run(ROOT / "configs" / "randomized_response.yaml", quick=True, out=tmp_path, progress=False)
    assert res.summary.ok and res.exit_code == 0, res.summary.text
    text = res.summary.text
    assert f"exact {w / (1 + w):.6f}" in text and "vs published 0.777" in text and "agrees" in text
    row = res.summary.table.set_index("mechanism").loc[randomized_response.NOTEBOOK]
    assert row["published_p_truth"] == 0.777 and row["exact_p_truth"] == pytest.approx(w / (1 + w), rel=1e-13)
    # ours is unchanged beside it: u = 1[r = x] and classic randomized response
    assert set(res.summary.table["mechanism"]) == {"exponential", "randomized_response", randomized_response.NOTEBOOK}


def test_randomized_response_flags_a_published_value_it_does_not_reproduce(tmp_path):
    import yaml

    raw = yaml.safe_load((ROOT / "configs" / "randomized_response.yaml").read_text(encoding="utf-8"))
    raw["notebook"]["published"] = 0.79
    raw["quick"]["epsilons"] = [1]
    res = run(raw, quick=True, out=tmp_path, progress=False)
    assert not res.summary.ok and "DISAGREES" in res.summary.text and res.exit_code != 0


def test_marital_status_example_is_credited_to_near_and_abuah(tmp_path):
    cfg = (ROOT / "configs" / "private_mode.yaml").read_text(encoding="utf-8")
    doc = private_mode.__doc__ or ""
    for text in (cfg, doc):
        text = " ".join(text.replace("#", " ").split())  # comments wrap lines
        assert "Near & Abuah" in text and 'Dwork & Roth §3.4\'s "most common marital status"' not in text
        assert "(Dwork & Roth §3.4) on data" not in text
    spec = load_config(ROOT / "configs" / "private_mode.yaml", quick=True).spec
    import pandas as pd

    s = private_mode.summarize(spec, pd.DataFrame(columns=["status", "what", "mechanism", "epsilon", "metric",
                                                           "consistent"]))
    assert "Near & Abuah" in s.text.splitlines()[0]


def test_private_mode_uses_the_real_column_and_exact_em_law():
    spec = load_config(ROOT / "configs" / "private_mode.yaml").spec
    import statsmodels.datasets.anes96 as anes

    vc = anes.load_pandas().data["PID"].value_counts()
    np.testing.assert_array_equal(spec.counts(), [vc.get(float(c), 0) for c in spec.categories])
    # exponential mechanism, definitional twin: p_c ∝ exp(eps * count_c / 2), computed directly
    eps = 0.05
    c = spec.counts()
    w = np.exp(eps * (c - c.max()) / 2)
    p = w / w.sum()
    loss, p_mode = private_mode.exact_metrics(spec, "EM", eps)
    assert loss == pytest.approx(float(np.sum(p * (c.max() - c))), rel=1e-12)
    assert p_mode == pytest.approx(float(p[np.argmax(c)]), rel=1e-12)


@pytest.mark.parametrize(
    "name,override,match",
    [
        ("pumpkin", {"r_min": 4.0}, "r_max: must be > r_min"),
        ("pumpkin", {"bids": [1, -2]}, r"bids\[1\]: must be >= 0"),
        ("pumpkin", {"loss_epsilons": [1, 0]}, r"loss_epsilons\[1\]"),
        ("laplace_from_exponential", {"f_value": 100.0}, "f_value"),
        ("randomized_response", {"truth": 2}, "truth"),
        ("private_mode", {"column": "age"}, "categories: is required"),
        ("private_mode", {"categories": [0, 1, 2]}, "outside the declared categories"),
        ("private_mode", {"mechanisms": [{"name": "exponential", "params": {"epsilon": 1}}]}, r"mechanisms\[0\].params.epsilon"),
        ("private_mode", {"mechanisms": [{"name": "report_noisy_max", "params": {"noise": "cauchy"}}]}, "noise"),
        ("pumpkin", {"typo_key": 1}, "typo_key: unknown key"),
    ],
)
def test_bad_config_names_the_field(name, override, match):
    import yaml

    raw = yaml.safe_load((ROOT / "configs" / f"{name}.yaml").read_text())
    raw.pop("quick")
    raw.update(override)
    with pytest.raises(ConfigError, match=match):
        load_config(raw)


def test_mean_interval_never_collapses_when_support_is_known():
    m, se, lo, hi = _textbook.mean_interval(np.zeros(500), 0.95, support=(0.0, 10.0))
    assert m == 0 and se == 0 and lo == 0
    # 0 nonzero draws in 500: Clopper-Pearson upper bound 1 - 0.025^(1/500), times the range
    assert hi == pytest.approx(10 * (1 - 0.025 ** (1 / 500)), rel=1e-12)
    m, se, lo, hi = _textbook.mean_interval(np.array([0.0, 1.0] * 50), 0.95)
    assert lo < m < hi and hi - m == pytest.approx(1.959963984540054 * se, rel=1e-12)


def test_clopper_pearson_matches_scipy_binomtest():
    from scipy import stats

    for k, n in [(0, 20), (3, 20), (20, 20), (517, 1000)]:
        lo, hi = _textbook.clopper_pearson(k, n, 0.95)
        ci = stats.binomtest(k, n).proportion_ci(0.95, method="exact")
        assert float(lo) == pytest.approx(ci.low, abs=1e-12) and float(hi) == pytest.approx(ci.high, abs=1e-12)


def test_density_curve_traces_the_exact_density():
    from dpharness.mechanisms.continuous import RevenuePrice

    law = RevenuePrice(5.0, 0.0, 3.5).distribution([1, 1, 1, 3.01])
    x, y = _textbook.density_curve(law, 50)
    # the trapezoid integral of the traced curve is 1 up to the trapezoid error of exp(c n r)
    assert float(np.sum(np.diff(x) * (y[1:] + y[:-1]) / 2)) == pytest.approx(1.0, abs=1e-3)
