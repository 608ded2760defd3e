"""``dpharness audit CONFIG``: the ``audit`` experiment kind run by the one runner -- exit status,
run folder, targets, resume, --jobs independence, config errors, the peers extra."""

import json
import shutil
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from dpharness.bench.cli import main


def _write(tmp_path, cfg, name="tiny.yaml"):
    p = tmp_path / name
    p.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return str(p)


def _run_dirs(out):
    return sorted(d.parent for d in out.rglob("config.yaml") if d.parent.name != "tasks")


def _run_dir(out):
    dirs = [d.parent for d in out.rglob("manifest.json")]
    assert len(dirs) == 1
    return dirs[0]


def _results(run):
    """results.csv without the timing column (everything else must be reproducible)."""
    return pd.read_csv(run / "results.csv").drop(columns=["seconds"])


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
    assert list(res["key"]) == list(res["task"])  # the old `key` column is kept beside the runner's `task`
    shared = res[(res["audit"] == "shared") & (res["samples"] == 950)]
    assert shared["violated"].all() and shared["support_violation"].all()
    assert (shared["epsilon_lower"] >= 5.0).all()
    assert not res[res["audit"] != "shared"]["violated"].any()
    # exact mode over every generated pair of the search, carried by its first task
    ex = pd.read_csv(run / "exact.csv")
    assert list(ex["audit"]) == ["lap_search"] and ex["exact_pairs"].iloc[0] > 1
    assert ex["exact_max_epsilon"].iloc[0] == pytest.approx(0.5, rel=1e-6) and not ex["exact_violated"].iloc[0]
    tg = pd.read_csv(run / "targets.csv")
    assert list(tg["met"]) == ["met", "met"]
    man = json.loads((run / "manifest.json").read_text())
    assert man["status"] == "complete" and man["experiment"] == "audit" and man["seed"] == 7
    assert man["tasks"]["total"] == 6 and man["summary_ok"] is True
    report = (run / "report.md").read_text()
    assert "## Targets" in report and "every audit behaved as expected" in report
    printed = capsys.readouterr().out
    assert "every audit behaved as expected" in printed
    table = printed.split("\n\nTargets:")[0]
    assert max(len(line) for line in table.splitlines()) <= 120
    assert "true" in table.splitlines()[0]  # zoo mechanisms know their true epsilon


def test_violated_non_control_exits_1(tmp_path, capsys):
    cfg = {"name": "bad", "seed": 1, "audits": [
        # a broken mechanism NOT marked as a control: its violation must fail the run
        {"id": "inverted", "mechanism": {"zoo": "laplace_inverted_scale", "epsilon": 0.5}, "pairs": "witness",
         "samples": [2000]}]}
    out = tmp_path / "runs"
    assert main(["audit", _write(tmp_path, cfg), "--out", str(out)]) == 1
    run = _run_dir(out)
    man = json.loads((run / "manifest.json").read_text())
    assert man["summary_ok"] is False
    assert "FAIL: inverted: a correct claim was flagged" in (run / "report.md").read_text()
    assert "FAIL: inverted" in capsys.readouterr().out


def test_unflagged_control_exits_1(tmp_path):
    # expect: broken on a correct mechanism: not flagged -> the benchmark fails
    cfg = {"name": "miss", "seed": 1, "audits": [
        {"id": "em_as_broken", "mechanism": {"zoo": "em"}, "expect": "broken", "pairs": "witness", "samples": [500],
         "alpha": 1e-6}]}
    assert main(["audit", _write(tmp_path, cfg), "--out", str(tmp_path / "r")]) == 1


def test_target_not_met_exits_1_unless_capped(tmp_path, capsys):
    # em is correct: 0 of 1 flagged, so "violated" is not met -> exit 1; under quick caps the
    # targets are reported but not judged.
    cfg = {"name": "tgt", "seed": 1, "quick": {"max_repeat": 1},
           "audits": [{"id": "em", "mechanism": {"zoo": "em"}, "pairs": "witness", "samples": [300], "alpha": 1e-6}],
           "targets": [{"id": "Tx", "check": "violated", "audit": "em"}]}
    path = _write(tmp_path, cfg)
    assert main(["audit", path, "--out", str(tmp_path / "a")]) == 1
    assert "target Tx NOT MET" in capsys.readouterr().out
    assert main(["audit", path, "--quick", "--out", str(tmp_path / "b")]) == 0
    assert "targets are reported, not judged" in capsys.readouterr().out


def test_jobs_do_not_change_results(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    cfg = _write(tmp_path, TINY)
    assert main(["audit", cfg, "--out", str(a), "--jobs", "1"]) == 0
    assert main(["audit", cfg, "--out", str(b), "--jobs", "2"]) == 0
    pd.testing.assert_frame_equal(_results(_run_dir(a)), _results(_run_dir(b)))


def test_interrupted_audit_resumes(tmp_path, capsys):
    # Simulate an interruption: a finished run folder loses its manifest and part of its task
    # records; the same command must resume that folder, compute only what is missing and give
    # the very same results.csv as the uninterrupted run.
    cfg = _write(tmp_path, TINY)
    full, part = tmp_path / "full", tmp_path / "part"
    assert main(["audit", cfg, "--out", str(full)]) == 0
    shutil.copytree(full, part)
    run = _run_dir(part)
    (run / "manifest.json").unlink()
    records = sorted(p for p in (run / "tasks").rglob("*") if p.is_file())
    assert records
    records[0].unlink()
    capsys.readouterr()
    assert main(["audit", cfg, "--out", str(part)]) == 0
    assert _run_dirs(part) == [run]  # resumed in place, no new folder
    man = json.loads((run / "manifest.json").read_text())
    assert 0 < man["tasks"]["computed"] < man["tasks"]["total"] == 6
    assert man["resumed"] is True
    pd.testing.assert_frame_equal(_results(run), _results(_run_dir(full)))


def test_audit_config_runs_under_run_too(tmp_path):
    # `dpharness run` on an audit config runs the same kind (exit 3 = a verdict failed; 0 here)
    cfg = {"name": "viarun", "seed": 2, "audits": [
        {"id": "lap", "mechanism": {"zoo": "laplace"}, "pairs": "witness", "samples": [200], "alpha": 1e-6}]}
    assert main(["run", _write(tmp_path, cfg), "--out", str(tmp_path / "r")]) == 0
    run = _run_dir(tmp_path / "r")
    assert (run / "report.md").is_file() and json.loads((run / "manifest.json").read_text())["experiment"] == "audit"


def test_experiment_config_given_to_audit_names_run(tmp_path, capsys):
    cfg = {"name": "exp", "experiment": "randomized_response", "epsilons": [1.0]}
    assert main(["audit", _write(tmp_path, cfg), "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert "dpharness run" in err and "Traceback" not in err
    assert not (tmp_path / "r").exists()


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
    assert not (tmp_path / "r").exists()


def test_all_mistakes_of_a_file_at_once(tmp_path, capsys):
    bad = {"audits": [
        {"id": "a", "mechanism": {"zoo": "em", "epsilon": -1}, "samples": [100]},
        {"id": "b", "mechanism": {"zoo": "laplace", "epsilon": 1.0}, "pairs": "witness", "samples": [100],
         "repeat": 0},
    ]}
    assert main(["audit", _write(tmp_path, bad), "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert "2 mistakes" in err and "audits[0].mechanism.epsilon" in err and "audits[1].repeat" in err


def _hide_peers(monkeypatch):
    for mod in list(sys.modules):
        if mod.split(".")[0] in ("diffprivlib", "opendp", "pydp"):
            monkeypatch.setitem(sys.modules, mod, None)
    for mod in ("diffprivlib", "diffprivlib.mechanisms", "diffprivlib.tools", "diffprivlib.accountant", "opendp",
                "opendp.prelude", "pydp", "pydp.algorithms", "pydp.algorithms.laplacian"):
        monkeypatch.setitem(sys.modules, mod, None)  # import raises ImportError


def test_missing_peers_extra_is_one_clear_message(tmp_path, capsys, monkeypatch):
    _hide_peers(monkeypatch)
    cfg = {"name": "p", "audits": [
        {"id": f"dpl{i}", "mechanism": {"peer": peer}, "exact": False, "pairs": [[[0, 4], [1, 3]]], "samples": [100]}
        for i, peer in enumerate(["diffprivlib_exponential", "opendp_noisy_max", "diffprivlib_permute_and_flip"])]}
    code = main(["audit", _write(tmp_path, cfg), "--out", str(tmp_path / "r")])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("pip install -e '.[peers]'") == 1 and "Traceback" not in err
    assert "diffprivlib, opendp" in err and "audits[0].mechanism.peer" in err
    assert not (tmp_path / "r").exists()


def test_peer_audit_when_installed():
    pytest.importorskip("diffprivlib")
    from dpharness import verifiers
    from dpharness.bench import peers

    m = peers.build("diffprivlib_exponential", epsilon=1.0)
    v = verifiers.audit(m, [0.0, 4.0], [1.0, 3.0], samples=3000, alpha=1e-6, rng=3)
    assert not v.violated and m.kind == "finite"


def test_failing_task_is_an_error_row_exit_1_and_retried(tmp_path, capsys, monkeypatch):
    from dpharness.bench.experiments import audit as kind

    real = kind.run_audit_task

    def flaky(a, samples, repeat, rng):
        if a.id == "em_ok":
            raise RuntimeError("simulated worker failure")
        return real(a, samples, repeat, rng)

    monkeypatch.setattr(kind, "run_audit_task", flaky)
    cfg, out = _write(tmp_path, TINY), tmp_path / "r"
    assert main(["audit", cfg, "--out", str(out)]) == 1  # --jobs 1 runs in this process
    printed = capsys.readouterr().out
    assert "em_ok (samples 2000, repeat 0): task error: RuntimeError: simulated worker failure" in printed
    run = _run_dir(out)
    res = pd.read_csv(run / "results.csv")
    assert list(res.loc[res["status"] == "error", "audit"]) == ["em_ok"]
    monkeypatch.setattr(kind, "run_audit_task", real)
    assert main(["audit", cfg, "--out", str(out)]) == 0  # the same command retries the failed task only
    man = json.loads((run / "manifest.json").read_text())
    assert man["tasks"]["computed"] == 1 and (pd.read_csv(run / "results.csv")["status"] == "ok").all()


CONFIGS = sorted((Path(__file__).resolve().parents[2] / "configs").glob("audit_*.yaml"))


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.name)
def test_shipped_audit_configs_validate(path):
    from dpharness.bench import peers
    from dpharness.bench.config import ConfigError, load_config

    for quick in (False, True):
        cfg = load_config(path, quick=quick)
        assert cfg.experiment == "audit" and cfg.name == path.stem and cfg.module.tasks(cfg.spec)
        if "peer" in str(cfg.raw["audits"]) and any(peers.version(d) is None for d in ("diffprivlib", "opendp",
                                                                                        "python-dp")):
            with pytest.raises(ConfigError, match="not installed"):
                cfg.module.check(cfg.spec)
        else:
            cfg.module.check(cfg.spec)
    full, quick = load_config(path), load_config(path, quick=True)
    assert full.hash != quick.hash  # quick caps are part of the resolved config
    assert len(quick.module.tasks(quick.spec)) <= len(full.module.tasks(full.spec))


@pytest.mark.slow
def test_quick_run_never_says_every_audit_behaved_when_capped_controls_went_unflagged(tmp_path):
    # --quick caps cut a positive control's budget: it is not judged there, and the summary line and
    # the JSON verdict say how many went unflagged instead of "every audit behaved as expected"
    import json
    import subprocess
    import sys

    import yaml

    cfg = {"name": "capped", "seed": 3, "quick": {"max_samples": 16}, "audits": [
        {"id": "broken", "mechanism": {"zoo": "laplace_inverted_scale", "epsilon": 0.5}, "expect": "broken",
         "samples": [16, 200000], "exact": False}]}
    p = tmp_path / "c.yaml"
    p.write_text(yaml.safe_dump(cfg))
    out = tmp_path / "v.json"
    proc = subprocess.run([sys.executable, "-m", "dpharness", "audit", str(p), "--quick", "--out", str(tmp_path / "r"),
                           "--json", str(out)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text())
    # 16 draws per dataset cannot certify epsilon > 0.5 on a loss-2 Laplace at alpha 0.05 (a support-free
    # event needs far more hits): the control is unflagged under the cap, deterministically for this seed
    assert "every audit behaved as expected" not in proc.stdout
    assert "NOT JUDGED: 1 broken entry unflagged under the --quick caps" in proc.stdout
    assert doc["verdict"]["broken_not_judged"] == 1 and "NOT JUDGED" in doc["verdict"]["message"]


@pytest.mark.parametrize("flag", ["--json", "--junit"])
def test_an_output_flag_never_overwrites_the_users_own_file(tmp_path, flag, capsys):
    """`--junit mymech.py` (or --json): the file is the user's code, not an earlier verdict: refused
    before anything runs, and the file is unchanged; an earlier verdict file is replaced."""
    from dpharness.bench.cli import main

    code = tmp_path / "mymech.py"
    code.write_text("def noisy_count(data, size, rng):\n    return rng.laplace(len(data), 1.0, size)\n")
    cfg = tmp_path / "c.yaml"
    cfg.write_text("audits:\n  - {id: a, mechanism: {name: zoo/laplace, epsilon: 1.0}, pairs: [[0.0, 1.0]], "
                   "samples: [2000]}\n", encoding="utf-8")
    before = code.read_bytes()
    assert main(["audit", str(cfg), "--out", str(tmp_path / "runs"), flag, str(code)]) == 2
    assert "is not a verdict file" in capsys.readouterr().err and code.read_bytes() == before
    assert not (tmp_path / "runs").exists()
    out = tmp_path / "verdict"
    assert main(["audit", str(cfg), "--out", str(tmp_path / "runs"), flag, str(out)]) == 0
    assert main(["audit", str(cfg), "--out", str(tmp_path / "runs"), flag, str(out)]) == 0  # its own: replaced
