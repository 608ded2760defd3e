"""User code that does not return: ``validate`` and ``audit`` answer within the per-call limit of the
check (``DPHARNESS_CALL_TIMEOUT``, docs/configs.md) naming the callable, exit 2, no run folder; the
process ends although the call is still sleeping."""

from __future__ import annotations

import time

import pytest

from conftest import assert_clean_error, files_under, run_cli

SLEEPY = "import time\n\ndef sleepy(data, size, rng):\n    time.sleep(3600)\n"


def _project(tmp_path, pairs: str):
    (tmp_path / "slow.py").write_text(SLEEPY, encoding="utf-8")
    (tmp_path / "c.yaml").write_text(
        "audits:\n  - {id: a, mechanism: {callable: 'slow:sleepy', epsilon: 1.0, neighbours: value}, "
        f"pairs: {pairs}, samples: [10000]}}\n", encoding="utf-8")


@pytest.mark.parametrize("command, pairs", [
    ("validate", "search"), pytest.param("audit", "[[0.0, 1.0], [1.0, 2.0]]", marks=pytest.mark.slow),
    pytest.param("validate", "[[0.0, 1.0], [1.0, 2.0]]", marks=pytest.mark.slow),
    pytest.param("audit", "search", marks=pytest.mark.slow)], ids=["validate-search", "audit-given", "validate-given",
                                                                   "audit-search"])
def test_a_callable_that_never_returns_is_reported_not_waited_for(tmp_path, pairs, command):
    _project(tmp_path, pairs)
    before = files_under(tmp_path)
    t0 = time.monotonic()
    args = [command, "c.yaml"] + (["--out", "runs"] if command == "audit" else [])
    proc = run_cli(*args, cwd=tmp_path, timeout=60, env={"DPHARNESS_CALL_TIMEOUT": "1"})
    took = time.monotonic() - t0
    msg = assert_clean_error(proc, code=2, names=("audits[0].mechanism.callable", "slow:sleepy",
                                                   "did not return within 1 s", "DPHARNESS_CALL_TIMEOUT"),
                             before=before, watch=tmp_path)
    assert msg.count("did not return") == 1  # said once, not once per pair
    assert took < 20, f"answered after {took:.1f} s"  # one limit (plus the interpreter's start), not an hour


def test_a_bad_limit_is_said_and_the_default_kept(tmp_path):
    _project(tmp_path, "[[0.0, 1.0]]")
    (tmp_path / "slow.py").write_text("def sleepy(data, size, rng):\n    return [0.0] * size\n", encoding="utf-8")
    proc = run_cli("validate", "c.yaml", cwd=tmp_path, timeout=60, env={"DPHARNESS_CALL_TIMEOUT": "fast"})
    assert proc.returncode == 0, proc.stderr
    assert "DPHARNESS_CALL_TIMEOUT must be a number of seconds >= 0 (0: no limit), got 'fast'; using 5" in proc.stderr
    assert proc.stderr.count("DPHARNESS_CALL_TIMEOUT") == 1
