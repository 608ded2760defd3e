"""Bad input to ``dpharness bench``: refused before anything is timed, exit 2, one message.

Every case runs the real command with the quick tier narrowed to one median size, so a case that
wrongly started the benchmark would show up as a table in the output (asserted absent) and as files
in the watched folder (asserted absent): in a subprocess (``run_cli``), except the option values,
which are checked in-process (``dpharness.bench.cli.main``: the same code, exit status and message)
with every third case also in a subprocess.
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
def test_bad_option_value_is_refused_before_running(tmp_path, capsys, argv, names):
    from dpharness.bench.cli import main

    before = files_under(tmp_path)
    args = ["bench", "--json", str(tmp_path / "b.json"), *argv]
    code = main(args)
    out = capsys.readouterr()
    err = _refused(subprocess.CompletedProcess(args, code, out.out, out.err), names, tmp_path, before)
    assert len(err.strip().splitlines()) == 1, err
    if OPTION_CASES.index(next(c for c in OPTION_CASES if c[1] == argv)) % 3 == 0:  # and as a user types it
        proc = run_cli(*args)
        assert (proc.returncode, proc.stderr) == (code, out.err)


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
    for opt in ("--quick", "--json", "--only", "--max-n", "--repeats", "--baseline", "--tolerance", "--alpha"):
        assert opt in text
    from dpharness.bench.cli import build_parser

    bench = build_parser()._subparsers._group_actions[0].choices["bench"]
    for action in bench._actions:
        assert action.help, f"{action.option_strings} has no help text"
    assert "0 ok" in text and "2 bad input" in text and "1 a significant slowdown against --baseline" in text


def _old_json(tmp_path: Path, **changes) -> Path:
    """A minimal earlier-run document (quick tier, median section, 3 repetitions of one ratio)."""
    import json

    row = {"name": "duff_median", "kind": "dpharness", "section": "median", "n": 1000, "floor": "np.partition",
           "ratio_to_floor": 100.0, "ratio_to_floor_samples": [99.0, 100.0, 101.0]}
    doc = {"schema": "dpharness.bench/1", "quick": True, "rows": [row], **changes}
    p = tmp_path / "old.json"
    p.write_text(json.dumps(doc))
    return p


# --baseline / --tolerance / --alpha: the gate's inputs, checked before anything is timed.
GATE_CASES = [
    ("missing-file", ["--baseline", "{tmp}/nope.json"], ("--baseline", "does not exist")),
    ("folder", ["--baseline", "{tmp}"], ("--baseline", "is a folder")),
    ("empty", ["--baseline", ""], ("--baseline", "empty path")),
    ("not-json", ["--baseline", "{tmp}/afile"], ("--baseline", "is not JSON")),
    ("foreign-json", ["--baseline", "{old:schema=other}"], ("--baseline", "dpharness.bench/1", "'other'")),
    ("legacy-json", ["--baseline", "{old:schema=dpharness-bench/1}"], ("--baseline", "re-measure")),
    ("no-samples", ["--baseline", "{old:rows=[]}"], ("--baseline", "2 or more repetitions")),
    ("other-tier", ["--baseline", "{old:quick=false}"], ("--baseline", "without --quick")),
    ("same-file-as-json", ["--baseline", "{old}", "--json", "{old}"], ("--json", "also the --baseline")),
    ("tolerance-without-baseline", ["--tolerance", "0.1"], ("--tolerance", "--baseline")),
    ("alpha-without-baseline", ["--alpha", "0.1"], ("--alpha", "--baseline")),
    ("tolerance-negative", ["--baseline", "{old}", "--tolerance", "-0.1"], ("--tolerance", "[0, 1)")),
    ("tolerance-one", ["--baseline", "{old}", "--tolerance", "1"], ("--tolerance", "[0, 1)")),
    ("tolerance-text", ["--baseline", "{old}", "--tolerance", "lots"], ("--tolerance", "'lots'")),
    ("alpha-zero", ["--baseline", "{old}", "--alpha", "0"], ("--alpha", "(0, 1)")),
    ("alpha-nan", ["--baseline", "{old}", "--alpha", "nan"], ("--alpha", "(0, 1)")),
]


@pytest.mark.parametrize("argv, names", [c[1:] for c in GATE_CASES], ids=[c[0] for c in GATE_CASES])
def test_bad_gate_input_is_refused_before_running(tmp_path, argv, names):
    import json

    (tmp_path / "afile").write_text("not json\n")
    args = []
    for a in argv:
        if a.startswith("{old"):
            changes = {}
            if ":" in a:
                k, v = a[5:-1].split("=", 1)
                changes[k] = json.loads(v) if v in ("[]", "false") else v
            a = str(_old_json(tmp_path, **changes))
        args.append(a.replace("{tmp}", str(tmp_path)))
    if "--json" not in args:
        args += ["--json", str(tmp_path / "b.json")]
    before = files_under(tmp_path)
    proc = run_cli("bench", *NARROW, *args)
    err = _refused(proc, names, tmp_path, before)
    assert len(err.strip().splitlines()) == 1, err


BAD_ROWS = [
    ("row-without-section", {"section": None}, ("rows[0].section", "non-empty text")),
    ("text-n", {"n": "many"}, ("rows[0].n", "positive number", "'many'")),
    ("text-samples", {"ratio_to_floor_samples": ["fast", "slow"]}, ("ratio_to_floor_samples[0]", "'fast'")),
    ("nan-samples", {"ratio_to_floor_samples": [float("nan"), 1.0, 2.0]}, ("ratio_to_floor_samples[0]", "nan")),
    ("samples-not-a-list", {"ratio_to_floor_samples": 3.0}, ("ratio_to_floor_samples", "list of numbers")),
]


@pytest.mark.parametrize("change, names", [c[1:] for c in BAD_ROWS], ids=[c[0] for c in BAD_ROWS])
def test_baseline_rows_are_checked_before_running(tmp_path, change, names):
    # a schema-valid file whose rows the gate cannot use: named, not a traceback; a NaN sample would
    # make the gate report "no significant slowdown" whatever was measured
    import json

    row = {"name": "duff_median", "kind": "dpharness", "section": "median", "n": 1000, "floor": "np.partition",
           "ratio_to_floor": 100.0, "ratio_to_floor_samples": [99.0, 100.0, 101.0]}
    row.update(change)
    if row.get("section") is None:
        del row["section"]
    old = tmp_path / "old.json"
    old.write_text(json.dumps({"schema": "dpharness.bench/1", "quick": True, "rows": [row]}))
    before = files_under(tmp_path)
    proc = run_cli("bench", *NARROW, "--baseline", str(old), "--json", str(tmp_path / "b.json"))
    err = _refused(proc, ("--baseline", *names), tmp_path, before)
    assert "Traceback" not in err
