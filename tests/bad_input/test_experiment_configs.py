"""Bad experiment configs and ``run``/``validate`` arguments: refused up front, exit 2, one message
naming the file and the dotted path at fault (with what is accepted), no traceback, no run folder.

Every case goes through the CLI entry point in-process (``dpharness.bench.cli.main``, what the
``dpharness`` script runs) for both ``run`` and ``validate``; every third case also runs the real
command in a subprocess (exit code and stderr exactly as a user sees them).
"""

from __future__ import annotations

import copy
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from conftest import assert_clean_error, files_under, run_cli

from dpharness.bench.cli import main

BASE: dict[str, Any] = {
    "name": "bad",
    "seed": 1,
    "data": {"generator": "normal", "n": 50},
    "lower": -10,
    "upper": 10,
    "epsilon": [0.5, 1],
    "datasets": 2,
    "draws": 3,
    "mechanisms": [
        {"label": "cauchy", "name": "smooth_sensitivity_median", "noise": "cauchy"},
        {"label": "lap", "name": "smooth_sensitivity_median", "noise": "laplace", "delta": 0.001},
    ],
}
BASE_TEXT = yaml.safe_dump(BASE, sort_keys=False)


def with_(**changes: Any) -> dict:
    """BASE with top-level keys replaced (a value of ``DROP`` removes the key)."""
    raw = copy.deepcopy(BASE)
    for k, v in changes.items():
        if v is DROP:
            raw.pop(k)
        else:
            raw[k] = v
    return raw


def mech(i: int, **changes: Any) -> dict:
    """BASE with mechanism ``i`` updated."""
    raw = copy.deepcopy(BASE)
    raw["mechanisms"][i].update(changes)
    return raw


DROP = object()
REF = {"rows": [{"mechanism": "lap", "mean": {0.5: 1.0}}]}

# (case id, content, strings the message must contain[, extra CLI args]). Content: a mapping (dumped
# as YAML), text, bytes, or a function of the test's folder returning the config path to use.
CASES: list[tuple] = [
    # -- the file itself ---------------------------------------------------------------------
    ("yaml_unclosed_list", BASE_TEXT + "title: [a, b\n", ("YAML syntax error", "line")),
    ("yaml_tab_indent", "name: bad\nmechanisms:\n\t- x\n", ("YAML syntax error", "line 3")),
    ("yaml_duplicate_key", BASE_TEXT + "epsilon: [2]\n", ("duplicate key 'epsilon'", "line 21", "first set on line 8")),
    ("yaml_duplicate_nested_key", BASE_TEXT.replace("noise: cauchy", "noise: cauchy\n  noise: laplace"),
     ("duplicate key 'noise'",)),
    ("yaml_not_utf8", BASE_TEXT.encode() + "title: caf\u00e9\n".encode("latin-1"), ("not UTF-8", "byte 0xe9 on line 21")),
    ("yaml_empty_file", "", ("the file is empty",)),
    ("yaml_only_comments", "# to do\n", ("the file is empty",)),
    ("yaml_top_level_list", "- name\n- seed\n", ("top level must be a mapping",)),
    ("yaml_top_level_text", "hello\n", ("top level must be a mapping", "'hello'")),
    ("yaml_python_tag", BASE_TEXT + "title: !!python/object:os.system x\n", ("unsupported YAML", "line 21", "python/object")),
    ("config_is_directory", lambda d: d, ("is a directory",)),
    ("config_missing", lambda d: d / "nope.yaml", ("nope.yaml", "file not found")),
    # -- epsilon and the other numbers -------------------------------------------------------
    ("epsilon_zero", with_(epsilon=0), ("epsilon", "must be > 0, got 0")),
    ("epsilon_negative_in_list", with_(epsilon=[0.5, -1]), ("epsilon[1]", "> 0")),
    ("epsilon_nan", BASE_TEXT.replace("- 0.5", "- .nan"), ("epsilon[0]", "finite")),
    ("epsilon_inf", BASE_TEXT.replace("- 0.5", "- .inf"), ("epsilon[0]", "finite")),
    ("epsilon_text", with_(epsilon="lots"), ("epsilon", "must be a number", "'lots'")),
    ("epsilon_bool", with_(epsilon=True), ("epsilon", "must be a number", "true")),
    ("epsilon_empty_list", with_(epsilon=[]), ("epsilon", "empty list")),
    ("epsilon_duplicate", with_(epsilon=[1, 1.0]), ("epsilon[1]", "duplicate")),
    ("epsilon_missing", with_(epsilon=DROP), ("epsilon", "is required")),
    ("delta_one", mech(1, delta=1), ("mechanisms[1].delta", "(0, 1)")),
    ("delta_above_one", mech(1, delta=1.5), ("mechanisms[1].delta", "(0, 1)", "1.5")),
    ("delta_negative", mech(1, delta=-0.1), ("mechanisms[1].delta",)),
    ("delta_nan", BASE_TEXT.replace("delta: 0.001", "delta: .nan"), ("mechanisms[1].delta",)),
    ("lower_equals_upper", with_(lower=10), ("upper", "must be > lower (10)")),
    ("lower_above_upper", with_(lower=20, upper=-20), ("upper", "> lower")),
    ("lower_missing", with_(lower=DROP), ("lower", "is required")),
    ("lower_text", with_(lower="minus ten"), ("lower", "a number")),
    ("upper_inf", BASE_TEXT.replace("upper: 10", "upper: .inf"), ("upper", "finite")),
    ("n_zero", with_(data={"generator": "normal", "n": 0}), ("data.n", "[1, 100000000]")),
    ("n_fraction", with_(data={"generator": "normal", "n": 10.5}), ("data.n", "an integer")),
    ("datasets_zero", with_(datasets=0), ("datasets", ">= 1")),
    ("draws_negative", with_(draws=-3), ("draws", ">= 1")),
    ("draws_text", with_(draws="many"), ("draws", "an integer", "'many'")),
    ("scale_zero", with_(scale=0), ("scale", "> 0")),
    # -- names, kinds and misspellings -------------------------------------------------------
    ("mechanism_unknown", mech(0, name="median_of_means"), ("mechanisms[0].name", "unknown mechanism", "accepted:",
                                                           "duff_median")),
    ("mechanism_misspelt", mech(0, name="smooth_sensitivty_median"),
     ("mechanisms[0].name", "did you mean 'smooth_sensitivity_median'")),
    ("mechanism_noise_unknown", mech(0, noise="gauss"), ("mechanisms[0].noise",)),
    ("mechanism_param_misspelt", mech(1, deltta=0.1), ("mechanisms[1].deltta", "did you mean 'delta'", "accepted:")),
    ("mechanism_sets_epsilon", mech(0, epsilon=1), ("mechanisms[0].epsilon", "top-level epsilon grid")),
    ("mechanisms_empty", with_(mechanisms=[]), ("mechanisms", "at least one")),
    ("mechanisms_not_list", with_(mechanisms={"name": "duff_median"}), ("mechanisms", "must be a list")),
    ("mechanism_not_mapping", with_(mechanisms=["duff_median"]), ("mechanisms[0]", "must be a mapping")),
    ("mechanism_labels_clash", mech(1, label="cauchy"), ("mechanisms[1].label", "duplicate label 'cauchy'")),
    ("top_key_misspelt", {**BASE, "epsilom": [1]}, ("epsilom", "did you mean 'epsilon'", "accepted:")),
    ("statistic_unknown", with_(statistic="mean"), ("statistic", "median, quantile", "'mean'")),
    ("q_without_quantile", with_(q=0.3), ("q", "statistic: quantile")),
    ("q_out_of_range", with_(statistic="quantile", q=[0.5, 1.5]), ("q[1]", "(0, 1)")),
    ("metric_unknown", with_(metric="rmse"), ("metric", "abs_error, sq_error")),
    ("truth_misspelt", with_(truth="lowr"), ("truth", "did you mean 'lower'")),
    ("clip_output_text", with_(clip_output="yes please"), ("clip_output", "true or false")),
    ("name_with_slash", with_(name="my run/1"), ("name", "letters, digits")),
    ("experiment_misspelt", with_(experiment="median_acc"), ("experiment", "did you mean 'median_accuracy'")),
    ("seed_negative", with_(seed=-1), ("seed", ">= 0")),
    ("seed_text", with_(seed="lucky"), ("seed", "an integer")),
    ("audits_key_in_experiment", {**BASE, "experiment": "median_accuracy", "audits": []},
     ("audits", "dpharness audit")),
    ("audit_config_with_misspelt_audits", {"name": "bad", "alpha": 0.05, "audit": [{"id": "a"}]},
     ("audit: is a key of audit configs (did you mean 'audits'?)", "dpharness audit")),
    # -- quick tier (checked with the full config) -------------------------------------------
    ("quick_bad_value", {**BASE, "quick": {"datasets": 0}}, ("quick.datasets", ">= 1")),
    ("quick_unknown_key", {**BASE, "quick": {"datasetz": 1}}, ("quick.datasetz", "did you mean 'datasets'")),
    ("quick_overrides_name", {**BASE, "quick": {"name": "x"}}, ("quick.name", "cannot be overridden")),
    ("quick_not_mapping", {**BASE, "quick": [1]}, ("quick", "must be a mapping")),
    ("quick_flag_without_section", BASE, ("quick", "no quick: overrides"), ("--quick",)),
    # -- reference values ------------------------------------------------------------------------
    ("reference_unknown_label", with_(reference={"rows": [{"mechanism": "lapp", "mean": {0.5: 1}}]}),
     ("reference.rows[0].mechanism", "did you mean 'lap'")),
    ("reference_epsilon_not_in_grid", with_(reference={"rows": [{"mechanism": "lap", "mean": {3: 1}}]}),
     ("reference.rows[0].mean.3", "epsilon values of the grid")),
    ("reference_tolerance_negative", with_(reference={**REF, "tolerance": {"rel": -1}}),
     ("reference.tolerance.rel", ">= 0")),
    # -- several mistakes: all of them, each with its path ------------------------------------
    ("three_mistakes_at_once", {**mech(1, delta=2), "datasets": 0, "epsilonn": 1},
     ("3 mistakes", "mechanisms[1].delta", "datasets: must be >= 1", "epsilonn: unknown key")),
    # -- the other kinds -------------------------------------------------------------------------
    ("rr_epsilon_zero", {"name": "bad", "experiment": "randomized_response", "epsilons": [0, 1]},
     ("epsilons[0]", "> 0")),
    ("rr_truth_two", {"name": "bad", "experiment": "randomized_response", "truth": 2}, ("truth", "0, 1")),
    ("laplace_lower_above_upper", {"name": "bad", "experiment": "laplace_from_exponential", "lower": 5, "upper": 1},
     ("upper", "must be > lower")),
    ("pumpkin_rmin_above_rmax", {"name": "bad", "experiment": "pumpkin", "r_min": 5, "r_max": 1},
     ("r_max", "must be > r_min")),
    ("private_mode_mechanism_unknown", {"name": "bad", "experiment": "private_mode",
                                        "mechanisms": [{"name": "exponentil"}]},
     ("mechanisms[0].name", "did you mean 'exponential'")),
    # -- command-line arguments ------------------------------------------------------------------
    ("seed_flag_negative", BASE, ("--seed", ">= 0", "-3"), ("--seed", "-3")),
    ("seed_flag_text", BASE, ("--seed", "invalid int value"), ("--seed", "abc")),
    ("seed_flag_fraction", BASE, ("--seed", "invalid int value"), ("--seed", "1.5")),
]
IDS = [c[0] for c in CASES]
# cases whose extra arguments only `run` takes
RUN_ONLY = {c[0] for c in CASES if len(c) > 3}


def materialise(tmp_path: Path, content: Any) -> Path:
    """Write the case's config into ``tmp_path/case`` (or let the case pick a path)."""
    folder = tmp_path / "case"
    folder.mkdir()
    if callable(content):
        return content(folder)
    p = folder / "bad.yaml"
    if isinstance(content, bytes):
        p.write_bytes(content)
    elif isinstance(content, str):
        p.write_text(content, encoding="utf-8")
    else:
        p.write_text(yaml.safe_dump(content, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return p


def call(argv: list, capsys: pytest.CaptureFixture) -> subprocess.CompletedProcess:
    """``dpharness ARGV`` in-process (argparse's own exit included), as a CompletedProcess."""
    try:
        code = main([str(a) for a in argv])
    except SystemExit as exc:  # argparse refusing an argument
        code = exc.code
    out = capsys.readouterr()
    return subprocess.CompletedProcess(argv, code, out.out, out.err)


def _case(case_id: str) -> tuple:
    c = next(c for c in CASES if c[0] == case_id)
    return c[1], c[2], (c[3] if len(c) > 3 else ())


def _names(path: Path, names: tuple, args: tuple) -> tuple:
    # argparse refusals name the flag, not the file
    return names if any(a in ("abc", "1.5") for a in args) else (str(path), *names)


@pytest.mark.parametrize("case_id", IDS)
def test_run_refuses(tmp_path: Path, capsys: pytest.CaptureFixture, case_id: str) -> None:
    content, names, args = _case(case_id)
    path, out = materialise(tmp_path, content), tmp_path / "runs"
    before = files_under(tmp_path)
    proc = call(["run", path, "--out", out, *args], capsys)
    assert_clean_error(proc, code=2, names=_names(path, names, args), before=before, watch=tmp_path)
    assert not out.exists()


@pytest.mark.parametrize("case_id", [i for i in IDS if i not in RUN_ONLY])
def test_validate_refuses(tmp_path: Path, capsys: pytest.CaptureFixture, case_id: str) -> None:
    content, names, _ = _case(case_id)
    path = materialise(tmp_path, content)
    before = files_under(tmp_path)
    proc = call(["validate", path], capsys)
    assert_clean_error(proc, code=2, names=(str(path), *names), before=before, watch=tmp_path)
    assert "ok  " not in proc.stdout


@pytest.mark.parametrize("case_id", IDS[::3])
def test_subprocess_refuses(tmp_path: Path, case_id: str) -> None:
    content, names, args = _case(case_id)
    path, out = materialise(tmp_path, content), tmp_path / "runs"
    before = files_under(tmp_path)
    command = "validate" if case_id in IDS[1::6] and not args else "run"
    proc = run_cli(command, path, *(("--out", out, *args) if command == "run" else ()), cwd=tmp_path)
    err = assert_clean_error(proc, code=2, names=_names(path, names, args), before=before, watch=tmp_path)
    messages = [ln for ln in err.splitlines() if ln.startswith("error: ") or ": error: " in ln]
    assert not out.exists() and len(messages) == 1, err  # one message (possibly listing several mistakes)


def test_every_mistake_is_listed_with_its_path(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    raw = {**mech(0, name="smooth_sensitivty_median"), "epsilon": [0.5, -1], "datasets": 0, "drawz": 3,
           "quick": {"datasets": -1}}
    path = materialise(tmp_path, raw)
    err = call(["validate", path], capsys).stderr
    lines = err.splitlines()
    assert lines[0] == f"error: {path}: 5 mistakes:", err
    assert [ln.split(":")[0].strip() for ln in lines[1:]] == [
        "drawz", "epsilon[1]", "datasets", "mechanisms[0].name", "quick.datasets"]


def test_valid_file_next_to_bad_one(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    good, bad = tmp_path / "good.yaml", tmp_path / "bad.yaml"
    good.write_text(BASE_TEXT, encoding="utf-8")
    bad.write_text(yaml.safe_dump(with_(datasets=0)), encoding="utf-8")
    proc = call(["validate", good, bad], capsys)
    assert proc.returncode == 2
    assert proc.stdout.startswith(f"ok  {good}: bad (median_accuracy, 8 tasks")
    assert f"{bad}: datasets: must be >= 1, got 0" in proc.stderr



def test_audit_config_to_run_is_an_audit(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    # `run` on a file with a top-level `audits:` list runs the audit kind; a misspelt key of an
    # experiment config that only audit configs have points at `dpharness audit`.
    raw = {**BASE, "max_samples": 100}
    path = materialise(tmp_path, raw)
    proc = call(["run", path, "--out", tmp_path / "r"], capsys)
    assert_clean_error(proc, code=2, names=("max_samples", "dpharness audit"), watch=tmp_path / "r")


def test_a_bad_epsilon_grid_is_one_mistake_not_a_reference_cascade(tmp_path):
    # a missing or negative epsilon grid used to add one follow-on error per reference cell
    # ("keys are epsilon values of the grid (1)"): the reference is not checked against a grid that
    # is not there
    from conftest import ROOT, run_cli

    text = (ROOT / "configs" / "duff_table1.yaml").read_text()
    for bad, key in ((text.replace("epsilon: [0.5, 1, 2]", "epsilon: [-0.5, 1, 2]"), "epsilon[0]"),
                     (text.replace("epsilon: [0.5, 1, 2]", "epsilonn: [0.5, 1, 2]"), "epsilon")):
        p = tmp_path / "c.yaml"
        p.write_text(bad)
        proc = run_cli("validate", str(p))
        assert proc.returncode == 2 and key in proc.stderr
        assert "reference." not in proc.stderr and "keys are epsilon values" not in proc.stderr, proc.stderr


@pytest.mark.parametrize("changes, names", [
    ({"ks": [1, 2000]}, ("ks[1]", "exceeds the 50 candidates", "'zipf'")),
    ({"ks": [100, 2000]}, ("ks[0]", "ks[1]", "exceeds")),
    ({"draws": "1e12", "ks": [1, 5]}, ("draws", "at most")),
], ids=["one-k-too-large", "every-k-too-large", "draws-too-many"])
def test_topk_checks_before_any_run(tmp_path, changes, names):
    # a k above the candidates used to be dropped silently (or exit 3 with no reference to be
    # outside of); draws that no sampler call can hold used to fail at run time
    import yaml
    from conftest import assert_clean_error, files_under, run_cli

    cfg = {"experiment": "topk_utility", "name": "tk", "seed": 1, "datasets": [{"source": "zipf", "n": 50}],
           "draws": 100, **changes}
    p = tmp_path / "tk.yaml"
    p.write_text(yaml.safe_dump(cfg))
    before = files_under(tmp_path)
    for cmd in (["validate", str(p)], ["run", str(p), "--out", str(tmp_path / "out")]):
        assert_clean_error(run_cli(*cmd), code=2, names=names, before=before, watch=tmp_path)
