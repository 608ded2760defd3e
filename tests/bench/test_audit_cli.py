"""``dpharness audit CONFIG``: exit status, run folder, targets, config errors, peers extra."""

import json
import sys

import pandas as pd
import pytest
import yaml

from dpharness.bench.cli import main


def _write(tmp_path, cfg, name="tiny.yaml"):
    p = tmp_path / name
    p.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return str(p)


def _run_dir(out):
    dirs = [d for d in out.rglob("manifest.json")]
    assert len(dirs) == 1
    return dirs[0].parent


TINY = {
    "name": "tiny",
    "seed": 7,
    "alpha": 0.05,
    "audits": [
        {"id": "shared", "mechanism": {"zoo": "rnm_shared_noise"}, "expect": "broken", "pairs": "witness",
         "samples": [200, 950], "repeat": 2},
        {"id": "em_ok", "mechanism": {"zoo": "em"}, "pairs": [[[0, 4], [1, 3]]], "samples": [2000], "alpha": 1e-6},
        {"id": "lap_search", "mechanism": {"zoo": "laplace", "epsilon": 0.5}, "pairs": "search", "samples": [4000],
         "alpha": 1e-6},
    ],
    "targets": [
        {"id": "T7", "text": "point mass", "check": "support_violation", "audit": "shared", "samples": 950, "value": 5.0},
        {"id": "T9", "text": "fast", "check": "wall_time_at_most", "value": 600},
    ],
}


def test_audit_passes_and_writes_run_folder(tmp_path, capsys):
    out = tmp_path / "runs"
    code = main(["audit", _write(tmp_path, TINY), "--out", str(out), "--jobs", "1"])
    assert code == 0
    run = _run_dir(out)
    for f in ("results.csv", "table.csv", "table.md", "targets.csv", "targets.md", "report.md", "config.yaml",
              "manifest.json", "exact.csv"):
        assert (run / f).is_file(), f
    assert (run / "figures" / "eps_lower_vs_samples.png").is_file()
    res = pd.read_csv(run / "results.csv")
    assert len(res) == 2 * 2 + 1 + 1 and (res["status"] == "ok").all()
    shared = res[(res["audit"] == "shared") & (res["samples"] == 950)]
    assert shared["violated"].all() and shared["support_violation"].all()
    assert (shared["epsilon_lower"] >= 5.0).all()
    assert not res[res["audit"] != "shared"]["violated"].any()
    tg = pd.read_csv(run / "targets.csv")
    assert list(tg["met"]) == ["met", "met"]
    man = json.loads((run / "manifest.json").read_text())
    assert man["status"] == "complete" and man["tasks"] == 6 and man["seed"] == 7
    report = (run / "report.md").read_text()
    assert "## Targets" in report and "every audit behaved as expected" in report
    assert "every audit behaved as expected" in capsys.readouterr().out


def test_violated_non_control_exits_1(tmp_path, capsys):
    cfg = {"name": "bad", "seed": 1, "audits": [
        # a broken mechanism NOT marked as a control: its violation must fail the run
        {"id": "inverted", "mechanism": {"zoo": "laplace_inverted_scale", "epsilon": 0.5}, "pairs": "witness",
         "samples": [2000]}]}
    out = tmp_path / "runs"
    assert main(["audit", _write(tmp_path, cfg), "--out", str(out)]) == 1
    run = _run_dir(out)
    man = json.loads((run / "manifest.json").read_text())
    assert man["status"] == "failures" and any("correct claim was flagged" in p for p in man["problems"])
    assert "FAIL: inverted" in capsys.readouterr().out


def test_unflagged_control_exits_1(tmp_path):
    # expect: broken on a correct mechanism: not flagged -> the benchmark fails
    cfg = {"name": "miss", "seed": 1, "audits": [
        {"id": "em_as_broken", "mechanism": {"zoo": "em"}, "expect": "broken", "pairs": "witness", "samples": [500],
         "alpha": 1e-6}]}
    assert main(["audit", _write(tmp_path, cfg), "--out", str(tmp_path / "r")]) == 1


def test_jobs_do_not_change_results(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    cfg = _write(tmp_path, TINY)
    assert main(["audit", cfg, "--out", str(a), "--jobs", "1"]) == 0
    assert main(["audit", cfg, "--out", str(b), "--jobs", "2"]) == 0
    cols = ["key", "epsilon_lower", "count_d1", "count_d2", "violated"]
    ra = pd.read_csv(_run_dir(a) / "results.csv")[cols].sort_values("key").reset_index(drop=True)
    rb = pd.read_csv(_run_dir(b) / "results.csv")[cols].sort_values("key").reset_index(drop=True)
    pd.testing.assert_frame_equal(ra, rb)


@pytest.mark.parametrize("bad,msg", [
    ({"audits": [{"id": "x", "mechanism": {"zoo": "nope"}, "samples": [100]}]}, "unknown zoo mechanism"),
    ({"audits": [{"id": "x", "mechanism": {"zoo": "em"}, "samples": [100], "expect": "maybe"}]}, "expect"),
    ({"audits": [{"id": "x", "mechanism": {"registry": "exponential"}, "pairs": "witness", "samples": [100]}]},
     "witness pairs exist only for zoo"),
    ({"audits": [{"id": "x", "mechanism": {"zoo": "em"}, "samples": [100], "colour": 1}]}, "colour"),
])
def test_config_errors_exit_2(tmp_path, capsys, bad, msg):
    assert main(["audit", _write(tmp_path, bad), "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert msg in err and "Traceback" not in err


def test_missing_peers_extra_is_one_clear_message(tmp_path, capsys, monkeypatch):
    for mod in ("diffprivlib", "diffprivlib.mechanisms", "diffprivlib.tools", "opendp", "opendp.prelude", "pydp",
                "pydp.algorithms", "pydp.algorithms.laplacian"):
        monkeypatch.setitem(sys.modules, mod, None)  # import raises ImportError
    cfg = {"name": "p", "audits": [{"id": "dpl", "mechanism": {"peer": "diffprivlib_exponential"}, "exact": False,
                                    "pairs": [[[0, 4], [1, 3]]], "samples": [100]}]}
    code = main(["audit", _write(tmp_path, cfg), "--out", str(tmp_path / "r")])
    err = capsys.readouterr().err
    assert code == 2
    assert "pip install -e '.[peers]'" in err and "Traceback" not in err
    assert not (tmp_path / "r").exists()


def test_peer_audit_when_installed():
    pytest.importorskip("diffprivlib")
    from dpharness import verifiers
    from dpharness.verifiers import peers

    m = peers.build("diffprivlib_exponential", epsilon=1.0)
    v = verifiers.audit(m, [0.0, 4.0], [1.0, 3.0], samples=3000, alpha=1e-6, rng=3)
    assert not v.violated and m.kind == "finite"
