"""The peers' suites as audit configs: every suite entry is audited with its raw output on its own
input pairs (``mechanism: {suite: ...}``, ``pairs: suite``), DP-Sniper's published bound beside ours.

The full configs (2*10^6 calls per mechanism) are the benchmark (docs/auditing.md, "The peers'
suites"); here they are validated, and a small config runs the same code path end to end.
"""

import math

import pandas as pd
import pytest
import yaml

from dpharness.bench.cli import main
from dpharness.verifiers import are_neighbours
from dpharness.verifiers.controls import suites


def _config(path):
    with open(path, encoding="utf-8") as f:
        return yaml.safe_load(f)


@pytest.mark.parametrize("suite", ["dpsniper", "statdp"])
def test_suite_config_lists_every_entry_with_its_expectation(suite):
    cfg = _config(f"configs/audit_{suite}_suite.yaml")
    assert main(["validate", f"configs/audit_{suite}_suite.yaml"]) == 0
    by_id = {a["id"]: a for a in cfg["audits"]}
    for e in suites.entries(suite):
        a = by_id[e.name]
        assert a["mechanism"] == {"suite": e.qualified} and a["pairs"] == "suite"
        assert a["expect"] == ("broken" if e.broken else "correct")
        # the certified pair stays within 10^6 draws per dataset: certification 0.6 * B / 2 plus selection
        assert max(a["samples"]) <= 2_000_000
        if e.broken:
            s = by_id[f"{e.name}.search"]
            assert s["pairs"] == "search" and max(s["samples"]) <= 1_000_000


def test_suite_pairs_are_legal_and_published_bounds_are_kept():
    for s in suites.suites():
        for e in suites.entries(s):
            assert e.pairs
            for d1, d2 in e.pairs:
                if s in ("dpsniper", "statdp"):  # the peers' suites use their papers' relations only
                    assert e.mechanism.claim.neighbours in ("value", "score_linf", "one_differ")
                assert are_neighbours(d1, d2, e.mechanism.claim), (e.qualified, d1, d2)
    assert suites.get("dpsniper/NoisyHist2").published["dpsniper_reg"] == 4.60


def test_small_suite_config_runs_with_the_peer_column(tmp_path, capsys):
    # NoisyHist2 (true epsilon 10 vs claim 0.1) certified far above the claim at 40,000 calls; the
    # correct NoisyHist1 audited at alpha 1e-6, so a false flag has probability <= 1e-6.
    cfg = {"name": "suite_small", "seed": 3, "alpha": 0.05, "audits": [
        {"id": "NoisyHist2", "mechanism": {"suite": "dpsniper/NoisyHist2"}, "expect": "broken", "pairs": "suite",
         "samples": [40000], "exact": False},
        {"id": "NoisyHist1", "mechanism": {"suite": "dpsniper/NoisyHist1"}, "expect": "correct", "pairs": "suite",
         "samples": [40000], "exact": False, "alpha": 1e-6},
        {"id": "NoisyHist2.search", "mechanism": {"suite": "dpsniper/NoisyHist2"}, "expect": "broken",
         "pairs": "search", "samples": [40000], "exact": False}]}
    p = tmp_path / "s.yaml"
    p.write_text(yaml.safe_dump(cfg, sort_keys=False))
    out = tmp_path / "runs"
    assert main(["audit", str(p), "--out", str(out), "--jobs", "1"]) == 0
    text = capsys.readouterr().out
    assert "peer_lb" in text and "vs_peer" in text
    table = pd.read_csv(next(out.rglob("table.csv")))
    row = table.set_index("audit").loc["NoisyHist2"]
    assert row["peer_lower"] == 4.6 and row["epsilon_lower_median"] > 1.0
    assert math.isclose(row["vs_peer"], row["epsilon_lower_median"] / 4.6)


def test_suite_mechanism_mistakes_are_named(tmp_path, capsys):
    cfg = {"name": "bad", "audits": [
        {"id": "a", "mechanism": {"suite": "dpsniper/NoSuchThing"}, "samples": [100]},
        {"id": "b", "mechanism": {"suite": "dpsniper/NoisyHist1", "epsilon": 1.0}, "samples": [100]},
        {"id": "c", "mechanism": {"zoo": "laplace"}, "pairs": "suite", "samples": [100]}]}
    p = tmp_path / "bad.yaml"
    p.write_text(yaml.safe_dump(cfg, sort_keys=False))
    assert main(["validate", str(p)]) == 2
    err = capsys.readouterr().err
    assert "audits[0].mechanism.suite: unknown suite mechanism 'dpsniper/NoSuchThing'" in err
    assert "audits[1].mechanism.epsilon: unknown parameter" in err
    assert "audits[2].pairs: suite pairs exist only for suite mechanisms" in err
