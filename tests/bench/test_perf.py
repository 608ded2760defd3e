"""The performance benchmark runs end to end, writes the documented JSON, and skips missing peers.

No timed assertions: timings on a shared machine are noise. What is checked is the plumbing
(schema, pairing of ratios, skip messages, figure, progress), which is what rots when nobody
runs it. Ratios are printed by the benchmark, never asserted.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import replace

import numpy as np
import pytest
from dpharness.bench import peers as peers_mod
from dpharness.bench import schemas
from dpharness.bench import perf
from dpharness.bench.cli import bench as perf_cli
from dpharness.bench.perf import figure, report, rows, timing
from dpharness.bench.perf.build import make_mechanism
from dpharness.bench.perf.plan import BenchInputError, Plan

# The smallest plan that still exercises the median/finite/verifier code paths (used where the
# real --quick tier of test_cli_quick_mode would be needlessly slow).
TINY = replace(
    perf.quick_plan(),
    sections=("median", "finite", "verifier"),
    median_ns=(200, 400),
    median_draws=10,
    finite_ks=(4, 16),
    finite_size=300,
    finite_repeats=2,
    repeats=2,
    min_repeats=1,
    peer_draws=3,
    budget=0.05,
    peer_budget=0.3,
    verifier_samples=(200,),
)

ENV_KEYS = {"cpu_model", "cpu_count", "numpy", "numpy_config", "peers", "versions", "git_commit",
            "load_average", "python"}
DOC_KEYS = {"schema", "created", "command", "quick", "plan", "environment", "fields", "rows", "skipped",
            "notes", "figure", "median_goal", "section_seconds", "wall_seconds", "verdict", "manifest", "gate"}


def _check_doc(doc: dict, path) -> None:
    on_disk = json.loads(path.read_text())
    assert set(on_disk) == DOC_KEYS
    assert on_disk["schema"] == perf.SCHEMA == "dpharness.bench/1"
    assert schemas.validate(on_disk, schemas.load_schema("bench")) == []
    assert on_disk["verdict"]["exit_code"] in (0, 1) and on_disk["verdict"]["passed"] == (on_disk["gate"] is None
                                                                                         or on_disk["gate"]["passed"])
    assert on_disk["fields"] == list(perf.ROW_FIELDS)
    assert on_disk["rows"] == json.loads(json.dumps(doc["rows"]))
    assert ENV_KEYS <= set(on_disk["environment"])
    assert on_disk["environment"]["numpy"] == np.__version__
    assert set(on_disk["environment"]["peers"]) == set(peers_mod.PEER_PACKAGES)
    for row in on_disk["rows"]:
        assert set(row) == set(perf.ROW_FIELDS), row["name"]
        assert row["section"] in perf.SECTIONS
        assert isinstance(row["name"], str) and row["name"]
        assert isinstance(row["n"], int) and row["n"] > 0
        assert isinstance(row["size"], int) and row["size"] > 0
        assert 1 <= row["repeats"]
        assert 0 < row["seconds_min"] <= row["seconds"] <= row["seconds_max"]
        if row["floor"] is not None:
            assert row["floor_seconds"] > 0
            assert 0 < row["ratio_to_floor_min"] <= row["ratio_to_floor"] <= row["ratio_to_floor_max"]
            samples = row["ratio_to_floor_samples"]  # the per-repetition ratios the gate tests
            assert samples and len(samples) <= row["repeats"]
            assert min(samples) == row["ratio_to_floor_min"] and max(samples) == row["ratio_to_floor_max"]
        if row["peer"] is not None:
            assert row["peer_seconds"] > 0 and row["peer_repeats"] >= 1
            assert 0 < row["ratio_to_peer_min"] <= row["ratio_to_peer"] <= row["ratio_to_peer_max"]
        if row["extrapolated"]:
            assert row["measured_size"] < row["size"]
    for s in on_disk["skipped"]:
        assert set(s) == {"section", "name", "reason"} and s["reason"]
    assert not list(path.parent.glob(f".{path.name}.*.tmp")), "temporary JSON left behind"


def _hide(monkeypatch, *packages: str) -> None:
    """Make ``import package[.anything]`` fail, even if an earlier test imported it."""
    for mod in list(sys.modules):
        if mod.split(".")[0] in packages:
            monkeypatch.setitem(sys.modules, mod, None)
    for pkg in packages:
        for sub in ("", ".tools", ".mechanisms", ".prelude", ".algorithms", ".algorithms.laplacian"):
            monkeypatch.setitem(sys.modules, pkg + sub, None)


@pytest.mark.slow
def test_missing_peers_are_skipped_and_the_hint_is_said_once(tmp_path, monkeypatch, capsys):
    # Simulate a fresh clone without the extra: imports fail and no distribution is installed.
    _hide(monkeypatch, "diffprivlib", "opendp", "pydp")
    monkeypatch.setattr(peers_mod, "_version", lambda dist: None)

    med, med_skip = peers_mod.median_peers(-1.0, 1.0, 1.0)
    fin, fin_skip = peers_mod.finite_peers(1.0, 1.0)
    assert med == [] and fin == []
    assert {s.name for s in med_skip} == {"diffprivlib.tools.median", "opendp.make_private_quantile",
                                         "pydp.laplacian.Median"}
    assert {s.name for s in fin_skip} == {"diffprivlib.Exponential", "diffprivlib.PermuteAndFlip",
                                         "opendp.make_noisy_max"}
    for s in med_skip + fin_skip:
        assert "not installed" in s.reason and "pip install -e '.[peers]'" in s.reason

    path = tmp_path / "nopeers.json"
    lines: list[str] = []
    doc = perf.run_bench(replace(TINY, sections=("median", "finite")), path, log=lines.append)
    _check_doc(doc, path)
    assert capsys.readouterr().out == "", "the library prints nothing; the CLI does"
    assert lines and all(line.startswith(("  median n=", "  finite k=")) for line in lines)
    assert all(r["peer"] is None for r in doc["rows"])
    assert not any(r["name"].startswith(("diffprivlib", "opendp", "pydp")) for r in doc["rows"])
    # the JSON keeps every skip with its full reason ...
    assert {s["name"] for s in doc["skipped"]} >= {s.name for s in med_skip + fin_skip}
    assert any(peers_mod.INSTALL_HINT in note for note in doc["notes"])
    # ... the printed summary says "not installed" and the install hint exactly once
    text = perf.format_summary(doc, path)
    assert text.count(peers_mod.INSTALL_HINT) == 1, text
    assert text.count("not installed") == 1, text
    assert "skipped: peer libraries not installed: diffprivlib, opendp, python-dp" in text
    for s in med_skip + fin_skip:
        assert s.name in text


def test_skips_of_installed_but_broken_peers_keep_their_reason_and_one_hint():
    hint = peers_mod.INSTALL_HINT
    skipped = [
        {"section": "median", "name": "diffprivlib.tools.median",
         "reason": f"diffprivlib 0.6.6 is installed but fails to import: boom; {hint}"},
        {"section": "finite", "name": "diffprivlib.Exponential",
         "reason": f"diffprivlib 0.6.6 is installed but fails to import: boom; {hint}"},
        {"section": "median", "name": "duff_median", "reason": "n=1e+07: predicted 400 s per call exceeds the 300 s limit"},
    ]
    lines = report.format_skips(skipped)
    assert "\n".join(lines).count(hint) == 1
    assert "skipped: [median] diffprivlib.tools.median: diffprivlib 0.6.6 is installed but fails to import: boom" in lines
    assert "skipped: [median] duff_median: n=1e+07: predicted 400 s per call exceeds the 300 s limit" in lines
    assert report.format_skips([]) == []


def test_broken_peer_install_is_reported_not_raised(monkeypatch):
    # Installed but failing to import (e.g. diffprivlib 0.6.6 with scikit-learn 1.9).
    _hide(monkeypatch, "diffprivlib")
    monkeypatch.setattr(peers_mod, "_version", lambda dist: "0.6.6")
    _, skipped = peers_mod.median_peers(-1.0, 1.0, 1.0)
    reason = {s.name: s.reason for s in skipped}["diffprivlib.tools.median"]
    assert "installed but fails to import" in reason and "scikit-learn<1.9" in reason


def test_ratios_are_paired_within_repetitions():
    # Deterministic times: the floor is slow in rep 1 (a noisy neighbour); pairing must absorb it.
    floor = timing.Impl("F", "floor", lambda s: None, 1)
    impl = timing.Impl("M", "dpharness", lambda s: None, 100)
    peer = timing.Impl("P", "peer", lambda s: None, 1)
    impl.times = {0: 2.0, 1: 20.0, 2: 3.0}
    impl.floor_times = {"F": {0: 1.0, 1: 10.0, 2: 1.0}}
    peer.times = {0: 8.0, 2: 6.0}  # capped repeats: the peer missed rep 1
    floor.times = {0: 1.0, 1: 10.0, 2: 1.0}
    (row,) = rows.rows_for("median", 1000, impl, [floor], [peer])
    assert row["seconds"] == 3.0 and row["seconds_min"] == 2.0 and row["seconds_max"] == 20.0
    # per-rep ratios 2, 2, 3 -> median 2 (an unpaired median-of-times ratio would give 3 / 1 = 3)
    assert row["ratio_to_floor"] == 2.0 and row["ratio_to_floor_max"] == 3.0
    # only reps 0 and 2 are paired with the peer: ratios 0.25 and 0.5
    assert row["ratio_to_peer"] == pytest.approx(0.375)
    assert row["peer_repeats"] == 2 and row["peer_size"] == 1 and row["size"] == 100

    out = rows.rows_for("median", 1000, impl, [floor, timing.Impl("G", "floor", lambda s: None, 1)],
                        [peer, timing.Impl("Q", "peer", lambda s: None, 1)])
    assert [(r["floor"], r["peer"]) for r in out] == [("F", "P"), ("F", "Q"), ("G", "P"), ("G", "Q")]
    assert out[2]["ratio_to_floor"] is None  # no pairs with G: reported as missing, not invented


def test_run_reps_times_floor_then_impl_in_every_granted_repetition():
    order: list[str] = []
    floor = timing.Impl("F", "floor", lambda s: order.append("F"), 1, measured_size=1)
    a = timing.Impl("A", "dpharness", lambda s: order.append("A"), 1, measured_size=1, repeats=3)
    b = timing.Impl("B", "peer", lambda s: order.append("B"), 1, measured_size=1, repeats=1)
    timing.run_reps([floor], [a, b], 3)
    assert order == ["F", "A", "F", "B", "F", "A", "F", "A"]
    assert sorted(a.times) == [0, 1, 2] and sorted(b.times) == [0]
    assert sorted(a.floor_times["F"]) == [0, 1, 2] and len(floor.times) == 4


def test_probe_extrapolates_slow_implementations():
    calls = []

    def fn(s):  # cost proportional to s, deterministic (counts work, not time)
        calls.append(s)
        np.sort(np.random.default_rng(0).random(2000 * s))

    impl = timing.Impl("slow", "dpharness", fn, 10**9)
    assert timing.probe(impl, 1, budget=0.02, max_call=10.0) is None
    assert 1 <= impl.measured_size < impl.size
    assert math.isfinite(impl.predicted) and impl.predicted > 0

    def broken(s):
        raise RuntimeError("boom")

    why = timing.probe(timing.Impl("broken", "dpharness", broken, 10), 1, 0.1, 10.0)
    assert why == "error: RuntimeError: boom"


def test_unknown_mechanism_is_a_skip_reason():
    m, why = make_mechanism("no_such_mechanism_xyz")
    assert m is None and "not registered" in why


def test_plan_from_cli_args():
    args = argparse.Namespace(quick=True, json=None, only=["median"], max_n=1000, repeats=2)
    plan = perf_cli.plan_from_args(args)
    assert plan.quick and plan.sections == ("median",) and plan.median_ns == (1000,) and plan.repeats == 2
    full = perf_cli.plan_from_args(argparse.Namespace(quick=False, json=None))
    assert full.median_ns == (10**3, 10**4, 10**5, 10**6, 10**7) and full.finite_size == 10**6
    assert full.finite_ks == (10, 10**3, 10**5) and full.verifier_samples == (10**5, 10**6)
    # strings as typed on the command line: 1e6, comma lists, sections in the benchmark's order
    cli_args = argparse.Namespace(quick=False, json=None, only=["verifier,median"], max_n="1e5", repeats="4")
    plan = perf_cli.plan_from_args(cli_args)
    assert plan.sections == ("median", "verifier") and plan.median_ns == (10**3, 10**4, 10**5)
    assert plan.repeats == 4 and plan.min_repeats == 3


@pytest.mark.parametrize("field, value", [
    ("sections", ()), ("sections", ("median", "nope")), ("repeats", 0), ("min_repeats", -1),
    ("median_ns", ()), ("median_ns", (0,)), ("finite_ks", (10, 2.5)), ("budget", 0.0), ("epsilon", -1.0),
    ("upper", -20.0),
])
def test_plan_refuses_bad_fields_naming_them(field, value):
    with pytest.raises(BenchInputError, match=f"Plan.{field}" if field != "upper" else "Plan.lower < Plan.upper"):
        replace(Plan(), **{field: value})


def test_output_paths_are_checked_before_running(tmp_path):
    path, png = perf.output_paths(tmp_path / "b.json")
    assert path == tmp_path / "b.json" and png == tmp_path / "b_scaling.png"
    assert list(tmp_path.iterdir()) == [], "the writability probe leaves nothing behind"
    with pytest.raises(BenchInputError, match="is a folder"):
        perf.output_paths(tmp_path, what="--json")
    with pytest.raises(BenchInputError, match="does not exist"):
        perf.output_paths(tmp_path / "missing" / "b.json")
    (tmp_path / "f").write_text("x")
    with pytest.raises(BenchInputError, match="not a folder"):
        perf.output_paths(tmp_path / "f" / "b.json")
    with pytest.raises(BenchInputError, match="empty path"):
        perf.output_paths("")
    # a failing check raises before anything is timed (run_bench would otherwise take seconds)
    with pytest.raises(BenchInputError):
        perf.run_bench(TINY, tmp_path / "missing" / "b.json")


def test_default_json_goes_under_results_perf_of_the_working_directory(tmp_path, monkeypatch, capsys):
    from dpharness.bench.cli import main

    monkeypatch.chdir(tmp_path)
    assert main(["bench", "--quick", "--only", "median", "--max-n", "1000", "--repeats", "1"]) == 0
    (path,) = (tmp_path / "results" / "perf").glob("bench_*_quick.json")
    doc = json.loads(path.read_text())
    _check_doc(doc, path)
    assert {r["section"] for r in doc["rows"]} == {"median"} and {r["n"] for r in doc["rows"]} == {1000}
    assert doc["plan"]["repeats"] == 1
    out = capsys.readouterr().out
    assert f"wrote {path.relative_to(tmp_path)}" in out


def test_figure_title_names_only_what_is_drawn():
    assert figure.panel_title("median", {"floor", "dpharness", "peer"}) == "median mechanisms vs floors and peers"
    title = figure.panel_title("finite", {"floor", "dpharness"})
    assert "peers" not in title.replace("no peer measured", "") and title.startswith("finite selection vs floors")


def test_progress_steps_are_counted_per_section():
    steps = perf.run.planned_steps(perf.quick_plan())
    assert steps == {"median": 2, "finite": 2, "table1": 1, "verifier": 4}


@pytest.mark.slow
def test_cli_quick_mode(tmp_path, capsys):
    # What CI runs: the real --quick tier, every section, through the dpharness entry point, so
    # the benchmark cannot rot. Only the plumbing is asserted (schema, pairing, skips, figure),
    # never a time: timings on a shared machine are noise.
    from dpharness.bench.cli import main

    path = tmp_path / "quick.json"
    assert main(["bench", "--quick", "--json", str(path)]) == 0
    doc = json.loads(path.read_text())
    _check_doc(doc, path)
    assert doc["quick"] is True
    rows_ = doc["rows"]
    assert {r["section"] for r in rows_} | {s["section"] for s in doc["skipped"]} == set(perf.plan.DEFAULT_SECTIONS)
    out = capsys.readouterr().out
    assert "== median ==" in out and "== finite ==" in out and "goal: every dpharness median" in out
    assert f"wrote {path}" in out
    assert out.count(peers_mod.INSTALL_HINT) <= 1

    plan = perf.quick_plan()
    # both floors were timed at every n / k, whatever else is (not yet) available
    for sec, ns, floors in (("median", plan.median_ns, ("np.partition", "np.sort")),
                            ("finite", plan.finite_ks, ("gumbel_argmax", "rng.choice"))):
        for n in ns:
            names = {r["name"] for r in rows_ if r["section"] == sec and r["n"] == n}
            assert set(floors) <= names, (sec, n, names)
    # every dpharness/peer median/finite row is paired with a floor
    floor_names = {"np.partition", "np.sort", "gumbel_argmax", "rng.choice"}
    for r in rows_:
        if r["name"] not in floor_names and r["section"] in ("median", "finite"):
            assert r["floor"] in floor_names
    # everything requested is either measured or reported as skipped with a reason
    measured = {r["name"] for r in rows_}
    skipped = {s["name"] for s in doc["skipped"]}
    expected = {"duff_median", "smooth_sensitivity_median[cauchy]", "laplace_median_global",
                "permute_and_flip", "exponential", "diffprivlib.tools.median",
                "opendp.make_private_quantile", "pydp.laplacian.Median", "diffprivlib.Exponential",
                "diffprivlib.PermuteAndFlip", "opendp.make_noisy_max", "table1[jobs=2]",
                "audit[exponential]"}
    assert expected <= measured | skipped, expected - (measured | skipped)

    png = path.with_name(path.stem + "_scaling.png")
    assert doc["figure"] == str(png)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_median_goal_reads_the_largest_n():
    def row(name, kind, n, ratio, floor="np.partition"):
        r = {k: None for k in perf.ROW_FIELDS}
        r.update(name=name, kind=kind, section="median", n=n, floor=floor, ratio_to_floor=ratio)
        return r

    rows_ = [row("duff_median", "dpharness", 10**6, 1.0), row("duff_median", "dpharness", 10**7, 3.0),
             row("duff_median", "dpharness", 10**7, 0.5, floor="np.sort"),
             row("ss", "dpharness", 10**7, 1.9), row("peer", "peer", 10**7, 90.0),
             row("np.sort", "floor", 10**7, 6.0)]
    goal = perf.median_goal(rows_)
    assert goal["n"] == 10**7
    got = {g["name"]: (g["ratio_to_partition"], g["met"]) for g in goal["rows"]}
    assert got == {"duff_median": (3.0, False), "ss": (1.9, True), "peer": (90.0, None)}
    assert "MISSED by 1.5x" in perf.format_goal(goal)
    assert perf.median_goal([]) is None
    # below n = 1e7 (the --quick tier) the goal is reported but not judged
    small = perf.median_goal([row("duff_median", "dpharness", 10**4, 30.0)])
    assert small["assessed"] is False and small["rows"][0]["met"] is None
    text = perf.format_goal(small)
    assert "not assessed" in text and "MISSED" not in text
