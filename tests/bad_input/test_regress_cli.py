"""Bad input for ``dpharness regress`` (and ``python -m dpharness.bench.regress power``).

Each case gives the command one unusable folder, file or option: exit 2, one message naming the
file or option at fault (and what would be valid), no traceback, and nothing written anywhere --
neither a report in the new run folder nor anything in the baseline. The run folders are copies
of the committed baseline results/baselines/regress_duff_quick, damaged one way per case. Most
cases call the CLI in-process (fast); a few run the real command in a subprocess.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import ROOT, assert_clean_error, files_under, run_cli

from dpharness.bench.cli import main

BASELINE = ROOT / "results" / "baselines" / "regress_duff_quick"
OTHER_KIND = ROOT / "results" / "baselines" / "regress_private_mode"


def call(argv, capsys) -> subprocess.CompletedProcess:
    """``dpharness ARGV`` in-process (argparse's own exit included), as a CompletedProcess."""
    try:
        code = main([str(a) for a in argv])
    except SystemExit as exc:  # argparse refuses a value
        code = exc.code
    out = capsys.readouterr()
    return subprocess.CompletedProcess(argv, code, out.out, out.err)


def one_message(proc: subprocess.CompletedProcess) -> None:
    lines = [line for line in (proc.stderr + proc.stdout).splitlines() if line.strip()]
    assert len(lines) == 1, lines


@pytest.fixture
def runs(tmp_path) -> tuple[Path, Path]:
    """(new, baseline): two copies of a committed baseline (same config and seed: comparable)."""
    new, base = tmp_path / "new", tmp_path / "base"
    shutil.copytree(BASELINE, new)
    shutil.copytree(BASELINE, base)
    return new, base


# -- damaging a run folder: each maker gets the folder and returns the path to pass -----------

def _text(p: Path, name: str, text: str | bytes) -> Path:
    target = p / name
    target.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    return p


def _results_lines(p: Path, edit) -> Path:
    lines = (p / "results.csv").read_text(encoding="utf-8").splitlines()
    (p / "results.csv").write_text("\n".join(edit(lines)) + "\n", encoding="utf-8")
    return p


def _not_a_run_folder(p: Path) -> Path:
    shutil.rmtree(p)
    p.mkdir()
    (p / "notes.txt").write_text("not a run")
    return p


def _parent_of_runs(p: Path) -> Path:
    inner = p.parent / "runs_parent" / "20250101T000000Z_7dd0a50b2c"
    inner.parent.mkdir()
    shutil.move(str(p), str(inner))
    return inner.parent


def _a_file(p: Path) -> Path:
    shutil.rmtree(p)
    p.write_text("task,status\n")
    return p


def _config(p: Path, **changes) -> Path:
    text = (p / "config.yaml").read_text(encoding="utf-8")
    cfg = yaml.safe_load(text)
    cfg.update(changes)
    (p / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False), encoding="utf-8")
    return p


def _manifest(p: Path, **changes) -> Path:
    m = json.loads((p / "manifest.json").read_text(encoding="utf-8"))
    m.update(changes)
    (p / "manifest.json").write_text(json.dumps(m), encoding="utf-8")
    return p


def _cell(lines: list[str], row: int, column: str, value: str) -> list[str]:
    import csv
    import io

    header = next(csv.reader([lines[0]]))
    fields = next(csv.reader([lines[row]]))
    fields[header.index(column)] = value
    buf = io.StringIO()
    csv.writer(buf, lineterminator="").writerow(fields)
    return [*lines[:row], buf.getvalue(), *lines[row + 1:]]


# (case id, which folder to damage, maker, strings the message must name)
FOLDER_CASES = [
    ("new_missing", "new", lambda p: p.parent / "no_such_run", ("no_such_run", "does not exist")),
    ("baseline_missing", "base", lambda p: p.parent / "no_such_baseline", ("baseline", "does not exist")),
    ("new_is_a_file", "new", _a_file, ("new run folder", "is a file, not a folder")),
    ("baseline_is_a_file", "base", _a_file, ("baseline run folder", "is a file")),
    ("not_a_run_folder", "new", _not_a_run_folder, ("is not a run folder", "results.csv, config.yaml, manifest.json")),
    ("parent_of_run_folders", "new", _parent_of_runs, ("is not a run folder", "holds run folders", "20250101T000000Z")),
    ("results_missing", "new", lambda p: (p / "results.csv").unlink() or p, ("lacks results.csv",)),
    ("results_truncated_mid_line", "new",
     lambda p: _text(p, "results.csv", (p / "results.csv").read_bytes()[:80_000]), ("results.csv", "truncated")),
    ("results_empty", "new", lambda p: _text(p, "results.csv", ""), ("results.csv", "is empty")),
    ("results_not_utf8", "new", lambda p: _text(p, "results.csv", b"\x8d\xff\x00garbage\n"), ("results.csv", "not UTF-8")),
    ("results_row_with_extra_fields", "new", lambda p: _results_lines(p, lambda ls: [*ls[:5], ls[5] + ",1,2,3", *ls[6:]]),
     ("results.csv", "line 6 has 21 field(s), the header has 18")),
    ("results_row_cut_short", "new", lambda p: _results_lines(p, lambda ls: [*ls[:9], ls[9][:40], *ls[10:]]),
     ("results.csv", "line 10 has")),
    ("results_header_only", "new", lambda p: _results_lines(p, lambda ls: ls[:1]), ("results.csv", "no rows")),
    ("results_errored_task", "new", lambda p: _results_lines(p, lambda ls: _cell(ls, 3, "status", "error")),
     ("1 task(s) with status other than ok",)),
    ("results_metric_not_a_number", "new",
     lambda p: _results_lines(p, lambda ls: _cell(ls, 4, "mean_abs_error_x100", "inf")),
     ("missing or non-finite mean_abs_error_x100",)),
    ("manifest_truncated", "new", lambda p: _text(p, "manifest.json", (p / "manifest.json").read_text()[:200]),
     ("manifest.json", "not valid JSON")),
    ("manifest_not_a_mapping", "base", lambda p: _text(p, "manifest.json", "[1, 2]"),
     ("baseline run", "manifest.json must be a mapping")),
    ("manifest_run_unfinished", "new", lambda p: _manifest(p, status="running"), ("not complete", "resume")),
    ("manifest_cells_missing", "new",
     lambda p: _manifest(p, cell_columns=["mechanism", "no_such_column"]), ("lacks column(s) no_such_column",)),
    ("config_corrupt", "new", lambda p: _text(p, "config.yaml", "name: [unclosed\n"), ("config.yaml", "not valid YAML", "line")),
    ("config_python_tag", "base", lambda p: _text(p, "config.yaml", "a: !!python/object:os.system {}\n"),
     ("config.yaml", "not valid YAML")),
    ("config_missing", "base", lambda p: (p / "config.yaml").unlink() or p, ("lacks config.yaml",)),
    ("configs_differ_epsilon", "new", lambda p: _config(p, epsilon=[0.5, 1, 4]),
     ("different configs", "epsilon (new [0.5, 1, 4], baseline [0.5, 1, 2])", "--update-baseline")),
    ("configs_differ_draws", "base", lambda p: _config(p, draws=99), ("different configs", "draws (new 100, baseline 99)")),
    ("configs_of_another_kind", "new", lambda p: shutil.rmtree(p) or shutil.copytree(OTHER_KIND, p),
     ("different configs", "experiment")),
]


@pytest.mark.parametrize("which, make, names", [c[1:] for c in FOLDER_CASES], ids=[c[0] for c in FOLDER_CASES])
def test_unusable_run_folder_is_refused(runs, tmp_path, capsys, which, make, names):
    new, base = runs
    target = make(new if which == "new" else base)
    new, base = (target, base) if which == "new" else (new, target)
    before = files_under(tmp_path)
    proc = call(["regress", new, base], capsys)
    assert_clean_error(proc, names=("dpharness regress", *names), before=before, watch=tmp_path)
    one_message(proc)


# (case id, options, strings the message must name)
OPTION_CASES = [
    ("alpha_zero", ["--alpha", "0"], ("--alpha must be in (0, 1), got 0.0",)),
    ("alpha_one", ["--alpha", "1"], ("--alpha must be in (0, 1)",)),
    ("alpha_above_one", ["--alpha", "1.5"], ("--alpha must be in (0, 1), got 1.5",)),
    ("alpha_negative", ["--alpha=-0.01"], ("--alpha must be in (0, 1)",)),
    ("alpha_nan", ["--alpha", "nan"], ("--alpha must be in (0, 1), got nan",)),
    ("tolerance_negative", ["--tolerance=-0.1"], ("--tolerance must be in [0, 1), got -0.1",)),
    ("tolerance_one", ["--tolerance", "1"], ("--tolerance must be in [0, 1)",)),
    ("tolerance_inf", ["--tolerance", "inf"], ("--tolerance must be in [0, 1), got inf",)),
]


@pytest.mark.parametrize("options, names", [c[1:] for c in OPTION_CASES], ids=[c[0] for c in OPTION_CASES])
def test_option_out_of_range_is_refused_before_reading(runs, tmp_path, capsys, options, names):
    new, base = runs
    before = files_under(tmp_path)
    proc = call(["regress", new, base, *options], capsys)
    assert_clean_error(proc, names=names, before=before, watch=tmp_path)
    one_message(proc)


@pytest.mark.parametrize("argv, names", [
    (["regress", "only_one_dir"], ("BASELINE_RUN_DIR",)),
    (["regress", "a", "b", "--alpha", "abc"], ("--alpha", "invalid float value: 'abc'")),
    (["regress", "a", "b", "--no-such-flag"], ("unrecognized arguments: --no-such-flag",)),
], ids=["missing_baseline_argument", "alpha_not_a_number", "unknown_flag"])
def test_argparse_refusals(capsys, argv, names):
    assert_clean_error(call(argv, capsys), names=names)


def test_update_baseline_with_an_unusable_new_run_leaves_the_baseline_alone(runs, tmp_path, capsys):
    new, base = runs
    (new / "results.csv").write_bytes((new / "results.csv").read_bytes()[:5000])
    before = {p: p.read_bytes() for p in base.iterdir()}
    watched = files_under(tmp_path)
    proc = call(["regress", new, base, "--update-baseline"], capsys)
    assert_clean_error(proc, names=("cannot update the baseline", "results.csv", "truncated"),
                       before=watched, watch=tmp_path)
    assert {p: p.read_bytes() for p in base.iterdir()} == before


def test_update_baseline_refuses_to_replace_a_folder_that_is_not_a_run(runs, tmp_path, capsys):
    new, _ = runs
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "notes.txt").write_text("keep me")
    before = files_under(tmp_path)
    proc = call(["regress", new, precious, "--update-baseline"], capsys)
    assert_clean_error(proc, names=("not empty and is not a run folder", "refusing to replace it"),
                       before=before, watch=tmp_path)
    assert (precious / "notes.txt").read_text() == "keep me"


# -- the real commands, in a subprocess --------------------------------------------------------


def test_subprocess_corrupt_manifest_exit_2(runs, tmp_path):
    new, base = runs
    (new / "manifest.json").write_text('{"status": "complete", "cell_col')
    before = files_under(tmp_path)
    proc = run_cli("regress", new, base)
    assert_clean_error(proc, names=("manifest.json", "not valid JSON"), before=before, watch=tmp_path)
    one_message(proc)


def power(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dpharness.bench.regress", "power", *map(str, args)], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("args, names", [
    (["no_such_dir"], ("no_such_dir", "does not exist")),
    ([BASELINE, "--power", "1.5"], ("--power must be in (0, 1), got 1.5",)),
    ([BASELINE, "--reps", "0"], ("--reps must be an integer >= 1, got 0",)),
    ([BASELINE, "--alpha", "0"], ("--alpha must be in (0, 1)",)),
    ([BASELINE, BASELINE, "--paired-with", BASELINE], ("--paired-with needs exactly one BASELINE_RUN_DIR",)),
], ids=["missing_dir", "power_above_one", "no_reps", "alpha_zero", "paired_with_two_baselines"])
def test_power_subcommand_refusals(args, names):
    before = files_under(BASELINE)
    assert_clean_error(power(*args), names=names, before=before, watch=BASELINE)


@pytest.mark.slow
def test_regressing_an_audit_run_says_so(tmp_path):
    # an audit run has verdicts, not an accuracy metric: the message says that (it used to read like a
    # corrupt manifest: "manifest metric must be a column name, got None")
    import yaml
    from conftest import assert_clean_error, run_cli

    cfg = {"name": "tiny_audit", "seed": 1, "audits": [
        {"id": "a", "mechanism": {"zoo": "laplace", "epsilon": 1.0}, "samples": [2000], "exact": False}]}
    (tmp_path / "a.yaml").write_text(yaml.safe_dump(cfg))
    proc = run_cli("audit", str(tmp_path / "a.yaml"), "--out", str(tmp_path / "out"))
    assert proc.returncode == 0, proc.stderr
    run = next((tmp_path / "out" / "tiny_audit").iterdir())
    err = assert_clean_error(run_cli("regress", str(run), str(run)), code=2, names=("is an audit run", "--json"))
    assert "manifest metric" not in err
