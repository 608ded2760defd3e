"""A witness replays from the run's files: ``--json`` holds the whole event and pair, and its
``replay.python`` line runs as printed and prints the certification counts of the run."""

from __future__ import annotations

import json

import pytest

LEAK = """import numpy as np

def noisy_sum(data, size, rng):
    return float(np.sum(data)) + rng.laplace(0.0, 1.0, size)
"""

CONFIG = """name: rp
seed: 1
{parallel}audits:
  - id: searched
    mechanism: {{callable: "leak:noisy_sum", epsilon: 1.0, neighbours: add_remove}}
    expect: broken
    pairs: search
    samples: [60000]
    float_events: true
    alpha: 0.001
  - id: given
    mechanism: {{callable: "leak:noisy_sum", epsilon: 1.0, neighbours: add_remove}}
    expect: broken
    pairs: [[[0.5], [0.5, 0.25]], [[0.1], [0.1, 0.2]]]
    samples: [40000]
    float_events: true
    alpha: 0.001
"""


@pytest.mark.parametrize("parallel", [False, pytest.param(True, marks=pytest.mark.slow)], ids=["one_stream", "keyed_chunks"])
def test_the_json_witness_replays_as_printed(tmp_path, monkeypatch, capsys, parallel):
    from dpharness.bench.cli import main

    (tmp_path / "leak.py").write_text(LEAK, encoding="utf-8")
    (tmp_path / "c.yaml").write_text(CONFIG.format(parallel="parallel_draws: true\n" if parallel else ""),
                                     encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert main(["audit", "c.yaml", "--out", "runs", "--json", "v.json"]) == 0
    capsys.readouterr()
    doc = json.loads((tmp_path / "v.json").read_text(encoding="utf-8"))
    for row in doc["audits"]:
        w = row["witness"]
        # the whole event: every bit pattern or sampler parameter, none cut to "... (n bit patterns)"
        # the whole event: every bit pattern, none cut to "... (n bit patterns)"
        assert w["event_spec"]["kind"] in ("float", "reachable") and len(w["event_spec"]["values"]) >= 1
        assert "..." not in json.dumps(w["event_spec"]) and w["d1_data"] and w["d2_data"]
        line = w["replay"]["python"]
        exec(line, {})  # the line as a user pastes it into Python
        assert capsys.readouterr().out.strip() == f"({w['count_d1']}, {w['count_d2']})"
