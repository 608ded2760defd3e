"""Bad input to ``dpharness bench``: refused before anything is timed, exit 2, one message.

Every case runs the real command in a subprocess (``run_cli``) with the quick tier narrowed to
one median size, so a case that wrongly started the benchmark would show up as a table in the
output (asserted absent) and as files in the watched folder (asserted absent).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from conftest import ROOT, assert_clean_error, files_under, run_cli

# Would run in about a second if the input were accepted: the narrowest valid benchmark.
NARROW = ("--quick", "--only", "median", "--max-n", "1000", "--repeats", "1")


def _unwritable_folder(tmp_path: Path) -> Path:
    """A folder this process cannot create files in (root ignores permission bits: use /sys)."""
    if os.geteuid() != 0:
        d = tmp_path / "ro"
        d.mkdir()
        d.chmod(0o500)
        return d
    try:  # sysfs is read-only for root too
        tempfile.NamedTemporaryFile(dir="/sys").close()
    except OSError:
        return Path("/sys")
    pytest.skip("no unwritable folder available as root")


def _refused(proc: subprocess.CompletedProcess, names: tuple[str, ...], watch: Path, before: set) -> str:
    err = assert_clean_error(proc, code=2, names=names, before=before, watch=watch)
    assert "== median ==" not in proc.stdout, "the benchmark ran before the input was checked"
    return err


# (id, argv after `bench` with {tmp} for the case's folder, strings the message must name)
JSON_CASES = [
    ("folder", ["--json", "{tmp}"], ("--json", "is a folder")),
    ("missing-parent", ["--json", "{tmp}/no/such/dir/b.json"], ("--json", "does not exist")),
    ("parent-is-a-file", ["--json", "{tmp}/afile/b.json"], ("--json", "afile", "not a folder")),
    ("empty", ["--json", ""], ("--json", "empty path")),
    ("not-a-regular-file", ["--json", "/dev/null"], ("--json", "/dev/null", "not a regular file")),
    ("figure-path-is-a-folder", ["--json", "{tmp}/b.json"], ("--json", "b_scaling.png")),
]


@pytest.mark.parametrize("argv, names", [c[1:] for c in JSON_CASES], ids=[c[0] for c in JSON_CASES])
def test_bad_json_path_is_refused_before_running(tmp_path, argv, names):
    (tmp_path / "afile").write_text("not a folder\n")
    (tmp_path / "b_scaling.png").mkdir()
    before = files_under(tmp_path)
    proc = run_cli("bench", *NARROW, *[a.replace("{tmp}", str(tmp_path)) for a in argv])
    err = _refused(proc, names, tmp_path, before)
    assert len(err.strip().splitlines()) == 1, err


def test_unwritable_json_folder_is_refused_before_running(tmp_path):
    folder = _unwritable_folder(tmp_path)
    before = files_under(tmp_path)
    proc = run_cli("bench", *NARROW, "--json", str(folder / "b.json"))
    err = _refused(proc, ("--json", "cannot write", str(folder)), tmp_path, before)
    assert len(err.strip().splitlines()) == 1, err


def test_default_output_folder_blocked_by_a_file_is_refused(tmp_path):
    # no --json: results/perf/ under the working directory, and `results` is a file there
    (tmp_path / "results").write_text("a file where the results folder would go\n")
    before = files_under(tmp_path)
    proc = run_cli("bench", *NARROW, cwd=tmp_path)
    err = _refused(proc, ("--json", "results", "not a folder"), tmp_path, before)
    assert len(err.strip().splitlines()) == 1, err


# Option values: checked by the benchmark itself (one line, no usage dump).
OPTION_CASES = [
    ("only-unknown", ["--only", "nope"], ("--only", "'nope'", "median, finite, table1, verifier")),
    ("only-typo", ["--only", "medain"], ("--only", "did you mean 'median'")),
    ("only-empty", ["--only", ","], ("--only", "at least one section")),
    ("max-n-zero", ["--max-n", "0"], ("--max-n", "> 0")),
    ("max-n-negative", ["--max-n", "-5"], ("--max-n", "> 0")),
    ("max-n-text", ["--max-n", "lots"], ("--max-n", "positive integer", "'lots'")),
    ("max-n-fraction", ["--max-n", "1.5"], ("--max-n", "positive integer")),
    ("max-n-inf", ["--max-n", "inf"], ("--max-n", "positive integer")),
    ("max-n-nan", ["--max-n", "nan"], ("--max-n", "positive integer")),
    ("max-n-below-tier", ["--quick", "--max-n", "10"], ("--max-n", "below the smallest median n", "1000")),
    ("repeats-zero", ["--repeats", "0"], ("--repeats", "> 0")),
    ("repeats-negative", ["--repeats", "-2"], ("--repeats", "> 0")),
    ("repeats-text", ["--repeats", "x"], ("--repeats", "positive integer")),
]


@pytest.mark.parametrize("argv, names", [c[1:] for c in OPTION_CASES], ids=[c[0] for c in OPTION_CASES])
def test_bad_option_value_is_refused_before_running(tmp_path, argv, names):
    before = files_under(tmp_path)
    proc = run_cli("bench", "--json", str(tmp_path / "b.json"), *argv)
    err = _refused(proc, names, tmp_path, before)
    assert len(err.strip().splitlines()) == 1, err


# Malformed command lines: argparse's own usage error (exit 2, names the option).
PARSER_CASES = [
    ("only-without-value", ["--only"], ("--only",)),
    ("json-without-value", ["--json"], ("--json",)),
    ("unknown-option", ["--fast"], ("--fast",)),
]


@pytest.mark.parametrize("argv, names", [c[1:] for c in PARSER_CASES], ids=[c[0] for c in PARSER_CASES])
def test_malformed_command_line_is_a_usage_error(tmp_path, argv, names):
    before = files_under(tmp_path)
    proc = run_cli("bench", *argv, cwd=tmp_path)
    _refused(proc, names, tmp_path, before)


def test_module_entry_point_checks_the_same_way(tmp_path):
    # python -m dpharness.bench.perf shares the parser and the checks of `dpharness bench`
    proc = subprocess.run([sys.executable, "-m", "dpharness.bench.perf", "--json", str(tmp_path), *NARROW],
                          cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "MPLBACKEND": "Agg"})
    _refused(proc, ("--json", "is a folder"), tmp_path, set())


def test_every_bench_option_has_help_and_exit_codes_are_documented():
    proc = run_cli("bench", "--help")
    assert proc.returncode == 0
    text = " ".join(proc.stdout.split())
    for opt in ("--quick", "--json", "--only", "--max-n", "--repeats"):
        assert opt in text
    from dpharness.bench.cli import build_parser

    bench = build_parser()._subparsers._group_actions[0].choices["bench"]
    for action in bench._actions:
        assert action.help, f"{action.option_strings} has no help text"
    assert "0 ok" in text and "2 bad input" in text and "1 reserved for a failed performance gate" in text
