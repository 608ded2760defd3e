"""Experiment kind ``pair_search``: the suites' entries searched with their own pairs and with none,
at equal budget. Config mistakes, a tiny run through the runner, and the table on hand-built rows."""

import math
from pathlib import Path

import pandas as pd
import pytest

from dpharness import verifiers
from dpharness.bench.config import ConfigError, load_config
from dpharness.bench.experiments import pair_search as ps
from dpharness.bench.run import runner
from dpharness.bench.run.runner import run

ROOT = Path(__file__).resolve().parents[2]
# alpha 1e-3: the correct entry (LaplaceMechanism, tight: true epsilon = claim) is then flagged by
# either mode with probability <= 2e-3, so "not flagged" below is a real check, not a lucky seed
TINY = {"name": "ps", "experiment": "pair_search", "seed": 3, "budget": 40_000, "alpha": 0.001,
        "entries": ["dpsniper/LaplaceMechanism", "statdp/noisy_max_v2b"]}


def _errors(raw):
    with pytest.raises(ConfigError) as exc:
        load_config({"name": "ps", "experiment": "pair_search", **raw})
    return str(exc.value)


def test_config_parses_and_names_its_mistakes():
    cfg = load_config(ROOT / "configs" / "pair_search.yaml")
    s = cfg.spec
    assert (s.budget, s.alpha, s.repeats, s.seed) == (1_000_000, 0.05, 1, 20261128)
    assert len(s.entries) == 31 and s.entries[0] == "dpsniper/LaplaceMechanism" and s.entries[-1] == "statdp/iSVT4"
    assert load_config(ROOT / "configs" / "pair_search.yaml", quick=True).spec.budget == 40_000
    only = load_config({"name": "ps", "experiment": "pair_search", "suites": ["statdp"], "broken_only": True}).spec
    assert only.entries == ("statdp/noisy_max_v1b", "statdp/noisy_max_v2b", "statdp/histogram_eps",
                            "statdp/iSVT1", "statdp/iSVT2", "statdp/iSVT3", "statdp/iSVT4")
    # the config's entry order, not the listed one; repeats x modes tasks with distinct keys and seeds
    spec = load_config({**TINY, "entries": TINY["entries"][::-1], "repeats": 2}).spec
    assert spec.entries == tuple(TINY["entries"])
    keys = [t.key for t in ps.tasks(spec)]
    assert keys[:2] == ["entry=dpsniper/LaplaceMechanism|mode=given|repeat=0",
                        "entry=dpsniper/LaplaceMechanism|mode=none|repeat=0"] and len(set(keys)) == 8

    text = _errors({"suites": ["dpsniper", "statdpp"]})
    assert "suites: unknown suite(s) statdpp; accepted: dpsniper, statdp" in text
    text = _errors({"entries": ["dpsniper/SparseVectorTechnique3", "dpsniper/SVT3"]})
    assert "entries: unknown entry dpsniper/SVT3" in text and "accepted: dpsniper/LaplaceMechanism," in text
    assert "statdp/iSVT4" in text
    text = _errors({"budget": -5, "alpha": 1.5, "repeats": 0, "budgett": 3})
    assert "budget: must be >= 8, got -5" in text and "alpha: must be in (0, 1), got 1.5" in text
    assert "repeats: must be >= 1, got 0" in text and "budgett: unknown key (did you mean 'budget'?)" in text
    assert "entries: selects no entry" in _errors({"entries": ["dpsniper/LaplaceMechanism"], "broken_only": True})


def _rows(run_dir):
    """results.csv as text without its timing columns (the runner's and the search's own)."""
    df = pd.read_csv(run_dir / "results.csv", dtype=str, keep_default_na=False)
    return df.drop(columns=["seconds", "search_seconds"]).to_csv(index=False)


def test_tiny_run_writes_both_modes_and_the_table(tmp_path, monkeypatch):
    res = run(TINY, out=tmp_path / "a", progress=False, figures=False)
    assert res.exit_code == 0 and res.errors == 0 and res.summary.ok
    d = res.run_dir
    assert (d / "pair_search.md").is_file() and (d / "pair_search.csv").is_file()
    rows = pd.read_csv(d / "pair_search.csv").set_index(["entry", "mode"])
    assert len(rows) == 4 and set(rows.index.get_level_values("mode")) == {"given", "none"}
    assert (rows["seed"] == 3).all() and (rows["calls"] <= 40_000).all() and (rows["calls"] > 30_000).all()
    v2b, lap = rows.loc["statdp/noisy_max_v2b"], rows.loc["dpsniper/LaplaceMechanism"]
    # inf survives the csv round trip; "no published bound" is NaN; the peer's bound is the max of its two
    assert math.isinf(v2b.loc["given", "true_epsilon"]) and v2b["published"].isna().all()
    assert lap.loc["none", "published"] == 0.098 and lap.loc["given", "true_epsilon"] == 0.1
    assert v2b["violated"].all() and v2b["broken"].all() and not lap["violated"].any()
    assert lap.loc["given", "pairs"] <= 4 < v2b.loc["none", "pairs"]  # its own pairs vs the generator's
    # the witness pair: one of the suite's (unlabelled, "pair <i>") or a labelled generated one
    assert v2b.loc["given", "pair"].startswith("pair ") and v2b.loc["none", "pair"].startswith("k=")
    assert 0 < v2b["event"].str.len().max() <= 300
    # the yardstick: the given search's winning pair searched alone (given rows only)
    assert v2b.loc["given", "best_pair_epsilon_lower"] > 0.7 and math.isnan(v2b.loc["none", "best_pair_epsilon_lower"])

    md = (d / "pair_search.md").read_text()
    ratio = v2b.loc["none", "epsilon_lower"] / v2b.loc["given", "epsilon_lower"]
    lines = md.splitlines()
    assert lines[0].startswith("| entry | claimed ε | true ε | given pairs ε≥ | no pair ε≥ | none/given |")
    assert lines[2].startswith(f"| `dpsniper/LaplaceMechanism` | 0.1 | 0.1 | {lap.loc['given', 'epsilon_lower']:.3g} | ")
    assert " | 0.098 | " + f"{lap.loc['none', 'epsilon_lower'] / 0.098:.2f} | 0/1 | 0/1 | " in lines[2]
    assert lines[3].startswith("| `statdp/noisy_max_v2b` (broken) | 0.7 | ∞ | ")
    assert f" | {ratio:.2f} |  |  | 1/1 | 1/1 | " in lines[3]
    best = v2b.loc["given", "best_pair_epsilon_lower"]
    assert lines[3].endswith(f" | {best:.3g} | {v2b.loc['none', 'epsilon_lower'] / best:.2f} |")
    assert "- statdp: no pair given flags 1/1 broken entries (every repeat: 1/1); given pairs flag 1/1" in md
    assert "- dpsniper: no broken entry selected" in md and "- dpsniper: correct entries flagged: none" in md
    assert "FALSE ALARM" not in md and "budget 40000 calls per search (both modes), alpha 0.001, 1 repeat(s), seed 3" in md
    assert list(res.summary.table["entry"]) == TINY["entries"]

    # the same rows (timing aside) with two workers
    monkeypatch.setattr(runner, "PROBE_SECONDS", 0.0)  # really send the tasks to the workers
    res2 = run(TINY, jobs=2, out=tmp_path / "b", progress=False, figures=False)
    assert res2.workers == 2
    assert _rows(res2.run_dir) == _rows(d)


def test_a_failed_search_is_an_error_row_and_not_ok(tmp_path, monkeypatch):
    real = verifiers.search

    def search(mech, *, generator, **kw):
        if generator == "auto":
            raise ValueError("no pair generator")
        return real(mech, generator=generator, **kw)

    monkeypatch.setattr(verifiers, "search", search)
    res = run({**TINY, "entries": ["dpsniper/LaplaceMechanism"], "budget": 2_000}, out=tmp_path, progress=False)
    assert res.errors == 1 and not res.summary.ok and res.exit_code == 1
    err = res.results[res.results["status"] == "error"]
    assert list(err["mode"]) == ["none"] and "ValueError: no pair generator" in err["message"].iloc[0]
    assert "1 search(es) failed" in res.summary.text
    assert "| `dpsniper/LaplaceMechanism` | 0.1 | 0.1 | " in res.summary.text and " | 0/1 | 0/0 | " in res.summary.text


def _hand(entry, mode, repeat, eps, violated, broken=True, published=math.nan, true=1.0, status="ok"):
    return {"status": status, "entry": entry, "mode": mode, "repeat": repeat, "broken": broken, "claimed_epsilon": 0.1,
            "true_epsilon": true, "published": published, "epsilon_lower": eps, "violated": violated}


def test_table_medians_ratios_and_flags_on_hand_built_rows():
    a, b, c = "dpsniper/A", "dpsniper/B", "statdp/C"
    rows = [
        # A, broken: given medians 0.2 (0.1, 0.2, 0.9), none 0.1 (0.05, 0.1, 0.3) -> none/given 0.5, none/peer 0.1/0.4
        *[_hand(a, "given", i, e, v, published=0.4, true=math.inf) for i, (e, v) in enumerate([(0.1, False), (0.2, True), (0.9, True)])],
        *[_hand(a, "none", i, e, v, published=0.4, true=math.inf) for i, (e, v) in enumerate([(0.05, False), (0.1, False), (0.3, True)])],
        # B, correct, flagged once with no pair; given bound 0 -> blank none/given
        *[_hand(b, "given", i, 0.0, False, broken=False, true=0.1) for i in range(3)],
        *[_hand(b, "none", i, e, v, broken=False, true=0.1) for i, (e, v) in enumerate([(0.02, False), (0.15, True), (0.01, False)])],
        # C, broken, flagged every repeat in both modes; one none search failed
        *[_hand(c, "given", i, 2.0, True, true=math.nan) for i in range(3)],
        _hand(c, "none", 0, 3.0, True, true=math.nan), _hand(c, "none", 1, 5.0, True, true=math.nan),
        {"status": "error", "entry": c, "mode": "none", "repeat": 2},
    ]
    df = pd.DataFrame(rows)
    t = ps.entry_table(df, [a, b, c]).set_index("entry")
    assert t.loc[a, "given_epsilon_lower"] == 0.2 and t.loc[a, "none_epsilon_lower"] == 0.1
    assert t.loc[a, "none_over_given"] == pytest.approx(0.5) and t.loc[a, "none_over_peer"] == pytest.approx(0.25)
    assert math.isnan(t.loc[b, "none_over_given"]) and math.isnan(t.loc[b, "none_over_peer"])
    assert t.loc[c, "none_epsilon_lower"] == 4.0 and t.loc[c, "repeats_none"] == 2

    lines = ps.table(df, [a, b, c]).splitlines()
    assert lines[2] == "| `dpsniper/A` (broken) | 0.1 | ∞ | 0.2 | 0.1 | 0.50 | 0.4 | 0.25 | 2/3 | 1/3 |  |  |"
    assert lines[3] == "| `dpsniper/B` | 0.1 | 0.1 | 0 | 0.02 |  |  |  | 0/3 | 1/3 |  |  |"
    assert lines[4] == "| `statdp/C` (broken) | 0.1 |  | 2 | 4 | 2.00 |  |  | 3/3 | 2/2 |  |  |"

    text = ps.suite_summary(df, [a, b, c])
    assert text.startswith("**FALSE ALARMS (correct entries flagged): dpsniper/B (given 0/3, none 1/3)**")
    assert ("- dpsniper: no pair given flags 1/1 broken entries (every repeat: 0/1); "
            "given pairs flag 1/1 broken entries (every repeat: 0/1)") in text
    assert "- dpsniper: broken entries with none/given < 0.8: dpsniper/A (0.50)" in text
    assert "- dpsniper: correct entries flagged: **1 FALSE ALARM(S)**: dpsniper/B" in text
    assert "- statdp: no pair given flags 1/1 broken entries (every repeat: 1/1)" in text
    assert "- statdp: broken entries with none/given < 0.8: none" in text
    assert "- statdp: correct entries flagged: none" in text
