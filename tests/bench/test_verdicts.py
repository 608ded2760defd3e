"""Machine-readable verdicts: ``--json`` documents follow their packaged schemas, ``--junit`` files
are JUnit XML with one case per audit row / regress cell, and the performance gate of
``dpharness bench --baseline`` flags a doubled ratio and passes a run against itself.

No timed assertions: the gate is tested on edited JSON (a benchmark's per-repetition ratios
doubled), where the outcome follows from the Welch statistic and Holm at the stated alpha.
"""

from __future__ import annotations

import copy
import json
import shutil
import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from dpharness.bench import perf, schemas
from dpharness.bench.cli import main
from dpharness.bench.perf import gate
from dpharness.bench.perf import run as perf_run
from dpharness.bench.regress.stats import holm, welch_greater

ROOT = Path(__file__).resolve().parents[2]
BASELINES = ROOT / "results" / "baselines"

TINY = replace(perf.quick_plan(), sections=("median",), median_ns=(200,), median_draws=5, repeats=4, min_repeats=2,
               budget=0.05, peer_budget=0.3)

AUDIT_CONFIG = """\
name: tiny_verdicts
seed: 3
alpha: 0.05
audits:
  - {id: inverted, mechanism: {zoo: laplace_inverted_scale, epsilon: 0.5}, expect: broken,
     pairs: witness, samples: [500, 2000], repeat: 2}
  - {id: em_ok, mechanism: {registry: exponential, epsilon: 1.0}, expect: correct,
     pairs: [[[0, 1, 2], [1, 1, 2]]], samples: [2000], repeat: 1}
"""


def _valid(doc: dict, command: str) -> None:
    errors = schemas.validate(doc, schemas.load_schema(command))
    assert errors == [], errors
    assert doc["schema"] == schemas.SCHEMA_IDS[command] == f"dpharness.{command}/1"
    assert doc["verdict"]["passed"] == (doc["verdict"]["exit_code"] == 0)


# ---------------------------------------------------------------- the validator itself


def test_validator_checks_the_subset_it_claims():
    s = {"type": "object", "required": ["a", "b"], "properties": {
        "a": {"type": "integer"}, "b": {"type": "array", "items": {"type": "string", "enum": ["x", "y"]}},
        "c": {"type": ["number", "null"]}, "d": {"const": "k"}}}
    assert schemas.validate({"a": 1, "b": ["x"], "c": None, "d": "k"}, s) == []
    assert schemas.validate({"a": 1.0, "b": []}, s) == []  # 1.0 is an integer in JSON Schema
    errs = schemas.validate({"a": True, "b": ["z", 3], "c": "no", "d": "j"}, s)
    assert any("$.a" in e and "integer" in e for e in errs)  # a bool is not an integer
    assert any("$.b[0]" in e and "'z'" in e for e in errs)
    assert any("$.b[1]" in e for e in errs)
    assert any("$.c" in e for e in errs) and any("$.d" in e for e in errs)
    assert schemas.validate({"a": 1}, s) == ["$: missing required key 'b'"]
    assert schemas.validate([], s) == ["$: expected object, got list"]


def test_every_schema_loads_and_is_versioned():
    for command in schemas.COMMANDS:
        s = schemas.load_schema(command)
        assert s["$id"] == s["properties"]["schema"]["const"] == f"dpharness.{command}/1"
        assert {"schema", "verdict", "manifest"} <= set(s["required"])


# ---------------------------------------------------------------- bench --json and the gate


@pytest.fixture(scope="module")
def bench_doc(tmp_path_factory):
    path = tmp_path_factory.mktemp("bench") / "old.json"
    perf.run_bench(TINY, path)  # the document is read back from disk: what a later run would load
    on_disk = json.loads(path.read_text())
    _valid(on_disk, "bench")
    assert on_disk["gate"] is None and on_disk["verdict"]["exit_code"] == 0
    return on_disk


def _synthetic(reps: int = 5, spread: float = 0.05, seed: int = 7) -> dict:
    """A bench document with fixed ratios (seeded, ``spread`` relative noise): the gate's statistics
    are then a function of these numbers only, not of this machine's timing noise."""
    rng = np.random.default_rng(seed)
    rows = []
    for name, ratio in (("duff_median", 100.0), ("laplace_median_global", 10.0), ("smooth_sensitivity_median", 80.0)):
        for floor in ("np.partition", "np.sort"):
            row = dict.fromkeys(perf.ROW_FIELDS)
            samples = (ratio * np.exp(rng.normal(0.0, spread, reps))).tolist()
            row.update(name=name, kind="dpharness", section="median", n=1000, size=1, repeats=reps, floor=floor,
                       ratio_to_floor=float(np.median(samples)), ratio_to_floor_min=min(samples),
                       ratio_to_floor_max=max(samples), ratio_to_floor_samples=samples)
            rows.append(row)
    return {"schema": perf.SCHEMA, "quick": True, "rows": rows}


def _doubled(doc: dict, key: str) -> dict:
    out = copy.deepcopy(doc)
    for r in out["rows"]:
        if r["kind"] == "dpharness" and f"{r['section']} n={r['n']:g} {r['name']} / {r['floor']}" == key:
            r["ratio_to_floor_samples"] = [2 * x for x in r["ratio_to_floor_samples"]]
    return out


def test_gate_passes_a_run_against_itself(bench_doc):
    g = gate.compare(bench_doc, bench_doc, tolerance=0.25, alpha=0.01)
    assert g["passed"] and g["slower"] == 0
    assert g["tested"] == len([b for b in gate.benchmark_samples(bench_doc).values() if len(b["samples"]) >= 2]) > 0
    assert {r["verdict"] for r in g["benchmarks"]} == {"ok"}


def test_gate_flags_a_doubled_ratio_and_only_it():
    doc = _synthetic()
    benches = gate.benchmark_samples(doc)
    key = "median n=1000 duff_median / np.partition"
    slow = _doubled(doc, key)
    g = gate.compare(slow, doc, tolerance=0.25, alpha=0.01)
    by = {r["benchmark"]: r for r in g["benchmarks"]}
    # the derived expectation: the statistic Welch gives this pair, Holm over the tested family
    xs, bs = np.array(benches[key]["samples"]) * 2, np.array(benches[key]["samples"])
    p = float(welch_greater(xs, bs, 1.25)[2])
    assert by[key]["p"] == pytest.approx(p)
    others = [r["p"] for k, r in by.items() if k != key and r["p"] is not None]
    reject, _ = holm([p, *others], 0.01)
    assert bool(reject[0]), f"a 2x slowdown of {key} must be significant here (p={p:.3g})"
    assert by[key]["verdict"] == "SLOWER" and by[key]["change_pct"] == pytest.approx(100.0)
    assert not g["passed"] and g["slower"] == 1 and key in g["message"]
    assert all(r["verdict"] == "ok" for k, r in by.items() if k != key)
    text = gate.format_gate(g)
    assert "FAIL: SLOWDOWN in 1 of" in text and "SLOWER" in text


def test_gate_reports_untested_new_and_missing_benchmarks(bench_doc):
    one = copy.deepcopy(bench_doc)
    first = next(r for r in one["rows"] if r["kind"] == "dpharness" and r["floor"])
    first["ratio_to_floor_samples"] = first["ratio_to_floor_samples"][:1]
    renamed = copy.deepcopy(bench_doc)
    for r in renamed["rows"]:
        if r["kind"] == "dpharness":
            r["name"] = r["name"] + "_v2"
    g = gate.compare(one, bench_doc)
    assert "not tested" in {r["verdict"] for r in g["benchmarks"]} and g["passed"]
    g = gate.compare(renamed, bench_doc)
    assert {r["verdict"] for r in g["benchmarks"]} == {"new", "missing"} and g["passed"] and g["tested"] == 0


def test_bench_cli_exits_1_on_a_slowdown_and_0_against_itself(tmp_path, monkeypatch, capsys):
    # the timing itself is replaced by recorded rows (no timed assertion): what is tested is the
    # CLI's gate -- baseline loaded and checked, compared, table printed, exit code, JSON verdict
    bench_doc = _synthetic()
    key = "median n=1000 laplace_median_global / np.sort"
    real = perf_run.run_bench_to

    def fake_run(plan, paths, log=None, progress=False, **kw):
        monkeypatch.setattr("dpharness.bench.perf.run._SECTIONS",
                            {"median": lambda plan, report: report.rows.extend(copy.deepcopy(fake_run.rows))})
        return real(plan, paths, log=log, progress=False, **kw)

    old = tmp_path / "old.json"
    half = copy.deepcopy(bench_doc)  # the baseline half as slow = the new run twice as slow
    for r in half["rows"]:
        if r["kind"] == "dpharness" and f"{r['section']} n={r['n']:g} {r['name']} / {r['floor']}" == key:
            r["ratio_to_floor_samples"] = [x / 2 for x in r["ratio_to_floor_samples"]]
    old.write_text(json.dumps(half))
    fake_run.rows = bench_doc["rows"]
    monkeypatch.setattr(perf_run, "run_bench_to", fake_run)
    argv = ["bench", "--quick", "--only", "median", "--json", str(tmp_path / "new.json"), "--baseline", str(old)]
    assert main(argv) == 1
    out = capsys.readouterr().out
    assert "performance gate against" in out and "SLOWER" in out and "FAIL: SLOWDOWN" in out
    doc = json.loads((tmp_path / "new.json").read_text())
    _valid(doc, "bench")
    assert doc["verdict"]["exit_code"] == 1 and doc["gate"]["slower"] == 1
    # a re-run against its own output passes
    (tmp_path / "same.json").write_text(json.dumps(bench_doc))
    argv[argv.index("--baseline") + 1] = str(tmp_path / "same.json")
    assert main(argv) == 0
    assert "PASS: no significant slowdown" in capsys.readouterr().out
    assert json.loads((tmp_path / "new.json").read_text())["verdict"]["passed"] is True


def test_committed_quick_baseline_is_usable():
    path = BASELINES / "bench_quick.json"
    doc = json.loads(path.read_text())
    _valid(doc, "bench")
    assert doc["quick"] is True
    gate.load_baseline(path, perf.quick_plan())
    assert gate.compare(doc, doc)["passed"]


# ---------------------------------------------------------------- regress --json / --junit


def _junit(path: Path) -> list[ET.Element]:
    root = ET.parse(path).getroot()
    assert root.tag == "testsuites"
    suite = root.find("testsuite")
    cases = suite.findall("testcase")
    assert int(suite.get("tests")) == len(cases)
    assert int(suite.get("failures")) == sum(c.find("failure") is not None for c in cases)
    return cases


def test_regress_json_and_junit_pass_and_fail(tmp_path, capsys):
    base = BASELINES / "regress_private_mode"
    new = tmp_path / "new"
    shutil.copytree(base, new)
    argv = ["regress", str(new), str(base), "--json", str(tmp_path / "r.json"), "--junit", str(tmp_path / "r.xml")]
    assert main(argv) == 0
    doc = json.loads((tmp_path / "r.json").read_text())
    _valid(doc, "regress")
    assert doc["verdict"]["cells"] == len(doc["cells"]) == 40 and doc["verdict"]["regressions"] == 0
    assert doc["runs"]["baseline"]["config_hash"] == doc["runs"]["new"]["config_hash"]
    cases = _junit(tmp_path / "r.xml")
    assert len(cases) == 40 and not any(c.find("failure") is not None for c in cases)

    # degrade one cell: twice the error of the first utility_loss cell
    res = pd.read_csv(new / "results.csv", dtype=str, keep_default_na=False)
    rows = res.index[res["metric"] == "utility_loss"][:1]
    res.loc[rows, "mc_error"] = [repr(float(v) * 2) for v in res.loc[rows, "mc_error"]]
    res.to_csv(new / "results.csv", index=False)
    assert main(argv) == 1
    capsys.readouterr()
    doc = json.loads((tmp_path / "r.json").read_text())
    _valid(doc, "regress")
    assert not doc["verdict"]["passed"] and doc["verdict"]["regressions"] == 1
    bad = [c for c in doc["cells"] if c["verdict"] == "regression"]
    assert len(bad) == 1 and bad[0]["change_pct"] == pytest.approx(100.0)
    failed = [c for c in _junit(tmp_path / "r.xml") if c.find("failure") is not None]
    assert len(failed) == 1 and failed[0].get("name") == bad[0]["cell"]
    msg = failed[0].find("failure").get("message")
    assert msg.startswith("REGRESSION") and "+100.0%" in msg and "Holm" in msg


def test_regress_outputs_say_why_runs_cannot_be_compared(tmp_path, capsys):
    argv = ["regress", str(tmp_path / "nope"), str(BASELINES / "regress_private_mode"),
            "--json", str(tmp_path / "r.json"), "--junit", str(tmp_path / "r.xml")]
    assert main(argv) == 2
    doc = json.loads((tmp_path / "r.json").read_text())
    _valid(doc, "regress")
    assert doc["verdict"]["comparable"] is False and doc["cells"] == []
    (case,) = _junit(tmp_path / "r.xml")
    assert case.find("error") is not None and "cannot compare" in case.find("error").get("message")


# ---------------------------------------------------------------- audit --json / --junit


def test_audit_json_and_junit_pass(tmp_path, capsys):
    cfg = tmp_path / "tiny.yaml"
    cfg.write_text(AUDIT_CONFIG)
    argv = ["audit", str(cfg), "--out", str(tmp_path / "out"), "--json", str(tmp_path / "a.json"),
            "--junit", str(tmp_path / "a.xml")]
    assert main(argv) == 0
    doc = json.loads((tmp_path / "a.json").read_text())
    _valid(doc, "audit")
    assert [(r["audit"], r["samples"]) for r in doc["audits"]] == [("inverted", 500), ("inverted", 2000),
                                                                     ("em_ok", 2000)]
    w = doc["audits"][1]["witness"]
    assert w["violated"] and w["event"] and w["witness_seed"].isdigit() and w["count_d1"] > w["count_d2"] or \
        w["count_d2"] > w["count_d1"]
    assert w["replay"]["command"] == f"dpharness audit {cfg} --seed 3"
    assert doc["run_manifest"]["config_hash"] == doc["config"]["hash"]
    cases = _junit(tmp_path / "a.xml")
    assert [c.get("name") for c in cases] == ["inverted [samples=500]", "inverted [samples=2000]",
                                               "em_ok [samples=2000]"]
    assert not any(c.find("failure") is not None for c in cases)


def test_audit_failure_carries_the_witness(tmp_path, capsys):
    cfg = tmp_path / "wrong.yaml"
    cfg.write_text(AUDIT_CONFIG.replace("name: tiny_verdicts", "name: wrong_claim").replace(
        "expect: broken,\n     pairs: witness, samples: [500, 2000], repeat: 2",
        "expect: correct,\n     pairs: witness, samples: [2000], repeat: 1"))
    argv = ["audit", str(cfg), "--out", str(tmp_path / "out"), "--json", str(tmp_path / "a.json"),
            "--junit", str(tmp_path / "a.xml")]
    assert main(argv) == 1
    doc = json.loads((tmp_path / "a.json").read_text())
    _valid(doc, "audit")
    assert doc["verdict"]["exit_code"] == 1 and doc["verdict"]["rows_failed"] == 1
    row = next(r for r in doc["audits"] if r["audit"] == "inverted")
    assert not row["passed"] and "a correct claim was flagged" in row["failures"][0]
    w = row["witness"]
    failed = [c for c in _junit(tmp_path / "a.xml") if c.find("failure") is not None]
    assert [c.get("name") for c in failed] == ["inverted [samples=2000]"]
    msg = failed[0].find("failure").get("message")
    for part in (w["event"], w["witness_seed"], f"{w['count_d1']}/{w['cert_draws_d1']}", "replay: dpharness audit"):
        assert part in msg, (part, msg)


# ---------------------------------------------------------------- validate --json


def test_validate_json_lists_every_config(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\nmechanisms: 3\n")
    good = ROOT / "configs" / "pumpkin.yaml"
    assert main(["validate", str(good), str(bad), "--json", str(tmp_path / "v.json")]) == 2
    doc = json.loads((tmp_path / "v.json").read_text())
    _valid(doc, "validate")
    assert doc["verdict"]["invalid"] == 1 and [c["valid"] for c in doc["configs"]] == [True, False]
    assert doc["configs"][0]["tasks"] > 0 and doc["configs"][0]["hash"]
    assert any("mechanisms" in e for e in doc["configs"][1]["errors"])
    assert main(["validate", str(good), "--json", str(tmp_path / "v.json")]) == 0
    assert json.loads((tmp_path / "v.json").read_text())["verdict"]["passed"] is True
