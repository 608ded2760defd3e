"""Bad ``--json`` / ``--junit`` paths of ``audit``, ``regress`` and ``validate``: refused before any
work (exit 2, one message naming the flag and what is accepted, nothing created)."""

from __future__ import annotations

import pytest
from conftest import ROOT, assert_clean_error, files_under, run_cli

AUDIT = str(ROOT / "configs" / "audit_mechanisms.yaml")
BASE = str(ROOT / "results" / "baselines" / "regress_private_mode")

COMMANDS = {
    "audit": ["audit", AUDIT, "--quick", "--out", "{tmp}/out"],
    "regress": ["regress", BASE, BASE],
    "validate": ["validate", str(ROOT / "configs" / "pumpkin.yaml")],
}
FLAGS = {"audit": ("--json", "--junit"), "regress": ("--json", "--junit"), "validate": ("--json",)}

PATHS = [
    ("folder", "{tmp}", ("is a folder",)),
    ("missing-parent", "{tmp}/no/such/dir/v.out", ("does not exist",)),
    ("parent-is-a-file", "{tmp}/afile/v.out", ("afile", "not a folder")),
    ("empty", "", ("empty path",)),
    ("not-a-regular-file", "/dev/null", ("/dev/null", "not a regular file")),
]

CASES = [(cmd, flag, *p) for cmd in COMMANDS for flag in FLAGS[cmd] for p in PATHS]


@pytest.mark.parametrize("cmd, flag, path, names", [(c[0], c[1], c[3], c[4]) for c in CASES],
                         ids=[f"{c[0]}{c[1]}-{c[2]}" for c in CASES])
def test_bad_output_path_is_refused_before_any_work(tmp_path, cmd, flag, path, names):
    (tmp_path / "afile").write_text("a file\n")
    before = files_under(tmp_path)
    argv = [a.replace("{tmp}", str(tmp_path)) for a in COMMANDS[cmd]] + [flag, path.replace("{tmp}", str(tmp_path))]
    proc = run_cli(*argv)
    err = assert_clean_error(proc, code=2, names=(flag, *names), before=before, watch=tmp_path)
    assert len(err.strip().splitlines()) == 1, err
    assert "ok " not in proc.stdout and "no significant" not in proc.stdout, "work started before the check"


@pytest.mark.parametrize("cmd", ["audit", "regress"])
def test_json_and_junit_on_the_same_file_are_refused(tmp_path, cmd):
    before = files_under(tmp_path)
    same = str(tmp_path / "out.txt")
    argv = [a.replace("{tmp}", str(tmp_path)) for a in COMMANDS[cmd]] + ["--json", same, "--junit", same]
    err = assert_clean_error(run_cli(*argv), code=2, names=("--junit", "also the --json"), before=before,
                             watch=tmp_path)
    assert len(err.strip().splitlines()) == 1, err


# -- outputs never overwrite what the command reads ------------------------------------------

def _copy_config(tmp_path, name="pumpkin.yaml"):
    dst = tmp_path / name
    dst.write_text((ROOT / "configs" / name).read_text())
    return dst


@pytest.mark.parametrize("cmd, flag", [("validate", "--json"), ("audit", "--json"), ("audit", "--junit")])
def test_output_over_the_config_is_refused(tmp_path, cmd, flag):
    cfg = _copy_config(tmp_path, "audit_mechanisms.yaml" if cmd == "audit" else "pumpkin.yaml")
    text = cfg.read_text()
    argv = [cmd, str(cfg)] + (["--quick", "--out", str(tmp_path / "out")] if cmd == "audit" else []) + [flag, str(cfg)]
    proc = run_cli(*argv)
    err = assert_clean_error(proc, code=2, names=(flag, "the config", "would destroy"))
    assert cfg.read_text() == text  # untouched
    assert not (tmp_path / "out").exists()
    assert len(err.strip().splitlines()) == 1, err


@pytest.mark.slow
def test_regress_output_into_the_baseline_folder_is_refused(tmp_path):
    import shutil

    base = tmp_path / "base"
    shutil.copytree(BASE, base)
    manifest = (base / "manifest.json").read_text()
    for flag, target in (("--json", base / "manifest.json"), ("--junit", base / "new.xml")):
        proc = run_cli("regress", BASE, str(base), flag, str(target))
        assert_clean_error(proc, code=2, names=(flag, "the baseline run folder", "only reads"))
    assert (base / "manifest.json").read_text() == manifest and not (base / "new.xml").exists()
    # and a later regress against it still works
    assert run_cli("regress", BASE, str(base)).returncode in (0, 1)


@pytest.mark.parametrize("cmd", ["audit", "regress", "validate"])
def test_an_overlong_file_name_is_an_error_not_a_traceback(tmp_path, cmd):
    long = str(tmp_path / ("v" * 300 + ".json"))
    argv = [a.replace("{tmp}", str(tmp_path)) for a in COMMANDS[cmd]] + ["--json", long]
    proc = run_cli(*argv)
    err = assert_clean_error(proc, code=2, names=("--json", "File name too long"))
    assert "Traceback" not in err


def test_update_baseline_refuses_another_experiment_kind(tmp_path):
    import shutil

    base = tmp_path / "base"
    shutil.copytree(BASE, base)
    other = tmp_path / "other"
    shutil.copytree(ROOT / "results" / "baselines" / "regress_duff_quick", other)
    before = {p.name: p.read_bytes() for p in base.iterdir() if p.is_file()}
    proc = run_cli("regress", str(other), str(base), "--update-baseline")
    assert_clean_error(proc, code=2, names=("cannot update the baseline", "same experiment kind"))
    assert {p.name: p.read_bytes() for p in base.iterdir() if p.is_file()} == before


def test_a_mistyped_probe_seconds_variable_is_a_warning_not_a_traceback():
    """DPHARNESS_PROBE_SECONDS=fast: every command would die at import; it is said once and the
    default used."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "DPHARNESS_PROBE_SECONDS": "fast"}
    out = subprocess.run([sys.executable, "-c", "import dpharness.bench.run.runner as r; print(r.PROBE_SECONDS)"],
                         env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "0.2"
    assert "DPHARNESS_PROBE_SECONDS must be a number" in out.stderr


def test_a_run_name_outside_ascii_is_refused_saying_ascii(tmp_path):
    from dpharness.bench.config import ConfigError, load_config

    with pytest.raises(ConfigError, match="letters, digits and _ . - \\(ASCII"):
        load_config({"name": "aüdit_ε", "experiment": "median_accuracy"})


def test_an_anchor_bomb_and_a_huge_config_are_answered_at_once(tmp_path):
    """YAML anchors expanding to 9^9 values under description: one line naming the key, not hours
    spent quoting the value; a config over the size limit is refused before it is parsed."""
    import time

    from dpharness.bench.cli import main
    from dpharness.bench.config import ConfigError, read_yaml
    from dpharness.bench.config import yaml_io

    lines = ["name: bomb", "experiment: median_accuracy", 'a0: &a0 ["x","x","x","x","x","x","x","x","x"]']
    lines += [f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 8)]
    lines.append("description: [" + ",".join(["*a7"] * 9) + "]")
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text("\n".join(lines) + "\n", encoding="utf-8")
    t0 = time.monotonic()
    assert main(["validate", str(bomb)]) == 2
    assert time.monotonic() - t0 < 10
    big = tmp_path / "big.yaml"
    big.write_text("name: big\n" + "# padding\n" * (yaml_io.MAX_CONFIG_BYTES // 10 + 1), encoding="utf-8")
    with pytest.raises(ConfigError, match="a config is at most"):
        read_yaml(big)


def test_wrap_refuses_attributes_with_lower_above_upper():
    from dpharness import verifiers
    from dpharness.mechanisms.base import ParamError

    with pytest.raises(ParamError, match="lower must be below upper") as e:
        verifiers.wrap(lambda d, s, r: [0.0] * s, epsilon=1.0, attributes={"lower": 1, "upper": 0})
    assert e.value.field == "attributes"


def test_an_unpicklable_mechanism_with_jobs_names_jobs_and_the_way_out():
    """A mechanism holding a lock cannot go to loky workers: a ParamError on jobs saying what to do,
    not a bare PicklingError."""
    import threading

    from dpharness import verifiers
    from dpharness.mechanisms.base import ParamError

    class Locked:
        def __init__(self):
            self.lock = threading.Lock()

        def __call__(self, d, size, rng):
            return float(d) + rng.laplace(0.0, 1.0, size)

    m = verifiers.wrap(Locked(), epsilon=1.0, neighbours="value", sensitivity=1.0)
    with pytest.raises(ParamError, match="module-level function or factory") as e:
        verifiers.audit(m, 0.0, 1.0, samples=20000, rng=1, jobs=2)
    assert e.value.field == "jobs"
