"""The harness modules split out of runner.py, config.py, median_accuracy.py, regress.py and perf.py,
tested at their own import paths (the behaviour itself is covered by the runner, config, regress
and perf tests through the public entry points)."""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

from dpharness.bench.config import validation, values, yaml_io
from dpharness.bench.run import claim, execution, result
from dpharness.bench.config import ConfigError
from dpharness.bench.experiments import _median_report, _median_spec, median_accuracy
from dpharness.bench.run.tasks import Task


def _all_modules() -> list[str]:
    # Walk each layer through its own __path__: the editable install maps the layers from their
    # own folders, so walking the root package alone would find nothing below it.
    out = ["dpharness"]
    for layer in ("mechanisms", "verifiers", "bench"):
        pkg = importlib.import_module(f"dpharness.{layer}")
        out.append(pkg.__name__)
        for info in pkgutil.walk_packages(pkg.__path__, prefix=f"{pkg.__name__}."):
            if not info.name.endswith("__main__"):
                out.append(info.name)
    return out


def test_walk_finds_every_layer():
    mods = _all_modules()
    for layer in ("mechanisms", "verifiers", "bench"):
        assert f"dpharness.{layer}" in mods
    assert "dpharness.bench.experiments.median_accuracy" in mods and "dpharness.bench.regress.power" in mods
    assert len(mods) > 60


@pytest.mark.parametrize("name", _all_modules())
def test_every_module_imports(name):
    # A module that only loads through some other module's lazy import still has to import on
    # its own (peer adapters without their library included: they fail at call time, not import).
    assert importlib.import_module(name).__name__ == name


def test_yaml_io_refuses_duplicate_keys(tmp_path):
    p = tmp_path / "dup.yaml"
    p.write_text("name: a\nseed: 1\nseed: 2\n")
    with pytest.raises(ConfigError, match="seed"):
        yaml_io.read_yaml(p)


def test_validation_ctx_collects_every_mistake():
    errors: list[tuple[str, str]] = []
    ctx = validation.Ctx(file="x.yaml", errors=errors)
    raw = {"epsilon": -1, "delta": 2}
    ctx.number(raw, "epsilon", lo=0, lo_open=True)
    ctx.number(raw, "delta", lo=0, hi=1, hi_open=True)
    assert [path for path, _ in errors] == ["epsilon", "delta"]


def test_did_you_mean_suggests_the_close_name():
    assert "epsilon" in values.did_you_mean("epsilonn", ["epsilon", "delta"])


def test_median_helpers_are_the_kind_s_parser_and_report():
    assert median_accuracy.parse is _median_spec.parse
    assert callable(_median_report.report_text) and callable(_median_report.compare_with_reference)


def test_run_dirs_refuse_an_out_that_is_a_file(tmp_path):
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(result.RunError, match="file"):
        claim._check_out(f / "runs")


def test_execute_task_turns_an_exception_into_an_error_record():
    # An unknown spec makes the kind's run_task fail: the record says so instead of raising.
    rec = execution.execute_task("median_accuracy", None, Task(key="k=1", params={}), 0)
    assert rec["status"] == "error" and rec["rows"] == [] and rec["key"] == "k=1"


@pytest.mark.parametrize("module", ["dpharness.bench.regress", "dpharness.bench.perf"])
def test_python_m_entry_points_answer_help(module):
    proc = subprocess.run([sys.executable, "-m", module, "--help"], capture_output=True, text=True, timeout=120,
                          cwd=Path(__file__).parent)
    assert proc.returncode == 0 and "usage" in proc.stdout.lower(), proc.stdout + proc.stderr
