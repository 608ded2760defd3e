"""The third bad-input corpus: user code named by ``callable:``, peer-library targets named by
``library:``, and hostile config files.

Each case feeds one bad input and asserts the error discipline: the documented exit code (2 for a
config or usage error), one message naming the key path / argument / file at fault, no traceback,
and nothing written (no run folder, the user's files unchanged). Most cases call the CLI entry point
in-process (``dpharness.bench.cli.main``); three run the real command in a subprocess, where the
process itself is the point (a ``sys.exit`` in user code, a YAML anchor bomb that must not hang, an
environment variable read at import).
"""

from __future__ import annotations

import re
import subprocess
import time

import pytest

from conftest import assert_clean_error, files_under, run_cli

from dpharness.bench.cli import main

#: A value mechanism (Laplace of scale 1 on one number): correct, for configs whose mistake is elsewhere.
NOISY = "def noisy(data, size, rng):\n    return data + rng.laplace(0.0, 1.0, size)\n"


def call(argv, capsys) -> subprocess.CompletedProcess:
    """``dpharness ARGV`` in-process, as a CompletedProcess for :func:`assert_clean_error`."""
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return subprocess.CompletedProcess(argv, code, out.out, out.err)


def _config(tmp_path, audit: str, top: str = "", name: str = "c.yaml"):
    """``name`` in tmp_path with one audit (``audit``: a YAML flow mapping) and ``top`` above it."""
    path = tmp_path / name
    path.write_text(f"{top}audits:\n  - {audit}\n", encoding="utf-8")
    return path


def _own_project(tmp_path, monkeypatch, module: str, code: str, audit: str, top: str = ""):
    """``<module>.py`` holding ``code`` and ``c.yaml`` with one audit, in a project folder that
    becomes the working directory (where dpharness finds the user's module)."""
    (tmp_path / f"{module}.py").write_text(code, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return _config(tmp_path, audit, top)


def _value_audit(target: str, extra: str = "", pairs: str = "[[0.0, 1.0]]") -> str:
    return (f"{{id: a, mechanism: {{callable: '{target}', epsilon: 1.0, neighbours: value{extra}}}, "
            f"pairs: {pairs}, samples: [1000]}}")


def _refused_by_audit(tmp_path, capsys, cfg, names, code: int = 2) -> str:
    """``dpharness audit CFG --out runs`` refuses: exit ``code``, ``names`` in the message, no file."""
    out = tmp_path / "runs"
    before = files_under(tmp_path)
    err = assert_clean_error(call(["audit", cfg, "--out", out], capsys), code=code, names=(str(cfg), *names),
                             before=before, watch=tmp_path)
    assert not out.exists()
    return err


# -- 1. an output flag naming the user's own module ------------------------------------------------

@pytest.mark.parametrize("argv", [["audit", "{cfg}", "--out", "{tmp}/runs", "--junit", "mymech.py"],
                                  ["validate", "{cfg}", "--json", "mymech.py"]], ids=["audit--junit", "validate--json"])
def test_output_flag_on_the_callables_own_module_is_refused(tmp_path, monkeypatch, capsys, argv):
    cfg = _own_project(tmp_path, monkeypatch, "mymech", NOISY, _value_audit("mymech:noisy"))
    code = (tmp_path / "mymech.py").read_bytes()
    before = files_under(tmp_path)
    argv = [a.replace("{cfg}", str(cfg)).replace("{tmp}", str(tmp_path)) for a in argv]
    flag = argv[-2]
    assert_clean_error(call(argv, capsys), code=2, names=(flag, "mymech.py", "is not a verdict file"),
                       before=before, watch=tmp_path)
    assert (tmp_path / "mymech.py").read_bytes() == code
    assert not (tmp_path / "runs").exists()


# -- 2. sys.exit(0) inside the callable (a subprocess: the process must not exit 0) ---------------

def test_sys_exit_in_a_callable_is_exit_2_naming_it(tmp_path):
    (tmp_path / "third_exits.py").write_text("import sys\ndef noisy(data, size, rng):\n    sys.exit(0)\n",
                                             encoding="utf-8")
    cfg = _config(tmp_path, _value_audit("third_exits:noisy"))
    before = files_under(tmp_path)
    proc = run_cli("validate", cfg, cwd=tmp_path, timeout=60)
    assert_clean_error(proc, code=2, names=(str(cfg.name), "audits[0].pairs[0]", "sys.exit(0)"),
                       before=before, watch=tmp_path)


# -- 3. a misspelt library module, with the library installed ----------------------------------------

def test_misspelt_library_module_proposes_the_nearest_module(tmp_path, capsys):
    pytest.importorskip("diffprivlib")
    cfg = _config(tmp_path, "{id: a, mechanism: {library: 'diffprivlib.mechanism:Laplace', params: {epsilon: 1, "
                            "sensitivity: 1}}, pairs: [[0.0, 1.0]], samples: [1000]}")
    err = _refused_by_audit(tmp_path, capsys, cfg, ("audits[0].mechanism.library", "'diffprivlib.mechanism'",
                                                    "did you mean 'diffprivlib.mechanisms'?"))
    assert "pip install" not in err and "peers" not in err, err  # installed: not "install the extra"


# -- 4. an OpenDP Transformation where a measurement is expected --------------------------------

def test_opendp_transformation_is_not_a_measurement():
    dp = pytest.importorskip("opendp.prelude")
    from dpharness import adapters

    dp.enable_features("contrib")
    t = dp.t.make_sum(dp.vector_domain(dp.atom_domain(bounds=(0.0, 1.0))), dp.symmetric_distance())
    with pytest.raises((TypeError, ValueError), match=r"Transformation.*then_laplace"):
        adapters.opendp(t)


# -- 5. python-dp integer aggregation fed float records -----------------------------------------------

def test_pydp_int_dtype_refuses_float_records_naming_the_fix(tmp_path, capsys):
    pytest.importorskip("pydp")
    cfg = _config(tmp_path, "{id: a, mechanism: {library: 'pydp.algorithms.laplacian:BoundedSum', params: "
                            "{epsilon: 1, lower_bound: 0, upper_bound: 1}}, pairs: [[[0.7, 0.7, 0.7], [0.7, 0.7]]], "
                            "samples: [1000]}")
    _refused_by_audit(tmp_path, capsys, cfg, ("audits[0].pairs[0][0]", "dtype='int'", "record 0 is 0.7",
                                              "truncate", "dtype='float'"))


# -- 6. a callable that raises on most generated datasets -------------------------------------------

def test_search_losing_most_pairs_to_keyerror_exits_1_saying_so(tmp_path, monkeypatch, capsys):
    cfg = _own_project(tmp_path, monkeypatch, "third_picky",
                       "def noisy_count(data, size, rng):\n"
                       "    if len(data) not in (1, 2):\n"
                       "        raise KeyError('row')\n"
                       "    return len(data) + rng.laplace(0.0, 1.0, size)\n",
                       "{id: a, mechanism: {callable: 'third_picky:noisy_count', epsilon: 1.0, sensitivity: 1.0}, "
                       "pairs: search, samples: [1000]}")
    proc = call(["audit", cfg, "--out", tmp_path / "runs"], capsys)
    out = assert_clean_error(proc, code=1, names=("KeyError", "were not audited"))
    assert "every audit behaved as expected" not in out
    m = re.search(r"raised on (\d+) of the (\d+) generated pairs", out)
    assert m, out
    crashed, generated = map(int, m.groups())
    assert generated > 0 and 2 * crashed > generated, out  # most pairs lost, and counted


# -- 7. a misspelt diffprivlib tool argument -----------------------------------------------------------

def test_misspelt_tool_argument_names_params_bound(tmp_path, capsys):
    pytest.importorskip("diffprivlib")
    cfg = _config(tmp_path, "{id: a, mechanism: {library: 'diffprivlib.tools:mean', params: {epsilon: 1, "
                            "bound: [0, 1]}}, pairs: search, samples: [1000]}")
    _refused_by_audit(tmp_path, capsys, cfg, ("audits[0].mechanism.params.bound:", "did you mean 'bounds'?"))


# -- 8. labels for a value mechanism; a privacy map instead of epsilon --------------------------------

def test_label_pair_for_a_value_mechanism_names_the_label(tmp_path, monkeypatch, capsys):
    cfg = _own_project(tmp_path, monkeypatch, "third_value", NOISY, _value_audit("third_value:noisy", pairs="[[a, b]]"))
    _refused_by_audit(tmp_path, capsys, cfg, ("audits[0].pairs[0][0]", "'a'", "local", "value neighbours"))


def test_privacy_map_with_input_metric_is_the_claim_of_a_callable(tmp_path, monkeypatch, capsys):
    code = ("def noisy_count(data, size, rng):\n    return len(data) + rng.laplace(0.0, 1.0, size)\n"
            "def pmap(d_in):\n    return float(d_in)\n")
    audit = ("{{id: a, mechanism: {{callable: 'third_pmap:noisy_count', {claim}input_metric: symmetric_distance}}, "
             "pairs: search, samples: [1000]}}")
    cfg = _own_project(tmp_path, monkeypatch, "third_pmap", code, audit.format(claim="privacy_map: 'third_pmap:pmap', "))
    proc = call(["validate", cfg], capsys)
    assert proc.returncode == 0, proc.stderr + proc.stdout
    assert "Traceback" not in proc.stderr and "ok " in proc.stdout
    # the map is what stood in for epsilon: without it, epsilon is required
    cfg = _config(tmp_path, audit.format(claim=""))
    assert_clean_error(call(["validate", cfg], capsys), code=2, names=("audits[0].mechanism.epsilon", "privacy_map"))


# -- 9. a callable returning one value whatever size --------------------------------------------------

def test_callable_returning_one_value_is_caught_by_the_probe(tmp_path, monkeypatch, capsys):
    cfg = _own_project(tmp_path, monkeypatch, "third_one", "def noisy(data, size, rng):\n    return 1.0\n",
                       _value_audit("third_one:noisy"))
    before = files_under(tmp_path)
    assert_clean_error(call(["validate", cfg], capsys), code=2,
                       names=("audits[0].pairs[0][0]", "third_one:noisy(data, 3, rng) must return 3 outputs"),
                       before=before, watch=tmp_path)
    _refused_by_audit(tmp_path, capsys, cfg, ("audits[0].pairs[0]", "must return 3 outputs"))


# -- 10. hostile config files ---------------------------------------------------------------------------

def test_anchor_bomb_under_description_is_answered_at_once(tmp_path):
    levels = ["  a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    levels += [f"  a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 8)]
    levels.append("  a8: [" + ", ".join(["*a7"] * 9) + "]")  # 9**9 leaves once expanded
    (tmp_path / "third_bomb.py").write_text(NOISY, encoding="utf-8")
    cfg = _config(tmp_path, _value_audit("third_bomb:noisy"), top="name: bomb\ndescription:\n" + "\n".join(levels) + "\n",
                  name="bomb.yaml")
    before = files_under(tmp_path)
    t0 = time.monotonic()
    proc = run_cli("validate", cfg, cwd=tmp_path, timeout=20)
    assert time.monotonic() - t0 < 10, "the anchor bomb took too long"
    assert proc.returncode in (0, 2)
    err = assert_clean_error(proc, code=proc.returncode, before=before, watch=tmp_path)
    if proc.returncode == 2:
        assert "description" in err, err


def test_config_over_the_size_limit_is_refused_naming_it(tmp_path, capsys):
    from dpharness.bench.config import yaml_io

    cfg = tmp_path / "big.yaml"
    cfg.write_text("name: big\naudits:\n  - " + _value_audit("m:noisy") + "\n"
                   + "# padding\n" * (yaml_io.MAX_CONFIG_BYTES // 10 + 1), encoding="utf-8")
    assert cfg.stat().st_size > 5 * 10**6
    before = files_under(tmp_path)
    assert_clean_error(call(["validate", cfg], capsys), code=2, names=(str(cfg), "a config is at most 5 MB"),
                       before=before, watch=tmp_path)
    _refused_by_audit(tmp_path, capsys, cfg, ("a config is at most 5 MB",))


# -- 11. names, environment, several parameter mistakes, reversed bounds, attributes -------------------

def test_non_ascii_run_name_is_refused(tmp_path, monkeypatch, capsys):
    cfg = _own_project(tmp_path, monkeypatch, "third_name", NOISY, _value_audit("third_name:noisy"),
                       top="name: aüdit_ε\n")
    _refused_by_audit(tmp_path, capsys, cfg, ("name:", "letters, digits", "'aüdit_ε'"))


def test_mistyped_probe_seconds_is_a_warning_not_a_traceback(tmp_path):
    (tmp_path / "third_probe.py").write_text(NOISY, encoding="utf-8")
    cfg = _config(tmp_path, _value_audit("third_probe:noisy"))
    proc = run_cli("audit", cfg, "--out", tmp_path / "runs", cwd=tmp_path, timeout=60,
                   env={"DPHARNESS_PROBE_SECONDS": "fast"})
    assert proc.returncode == 0, proc.stderr + proc.stdout
    assert "Traceback" not in proc.stderr + proc.stdout
    warning = "warning: DPHARNESS_PROBE_SECONDS must be a number of seconds >= 0, got 'fast'"
    assert proc.stderr.count(warning) == 1, proc.stderr


def test_two_wrong_library_parameters_are_named_in_one_message(tmp_path, capsys):
    pytest.importorskip("diffprivlib")
    cfg = _config(tmp_path, "{id: a, mechanism: {library: 'diffprivlib.mechanisms:Laplace', params: {epsilon: 1, "
                            "sensitivty: 1, delt: 0}}, pairs: [[0.0, 1.0]], samples: [1000]}")
    err = _refused_by_audit(tmp_path, capsys, cfg, ("audits[0].mechanism.params.sensitivty", "'sensitivity'",
                                                    "params.delt", "'delta'"))
    assert len(err.strip().splitlines()) == 1, err


def test_reversed_tool_bounds_name_params_bounds_not_the_pair(tmp_path, capsys):
    pytest.importorskip("diffprivlib")
    cfg = _config(tmp_path, "{id: a, mechanism: {library: 'diffprivlib.tools:mean', params: {epsilon: 1, "
                            "bounds: [1, 0]}}, pairs: search, samples: [1000]}")
    err = _refused_by_audit(tmp_path, capsys, cfg, ("audits[0].mechanism.params.bounds:", "lower < upper"))
    assert "pairs" not in err, err


def test_reversed_attributes_of_a_callable_are_refused(tmp_path, monkeypatch, capsys):
    cfg = _own_project(tmp_path, monkeypatch, "third_attr", NOISY,
                       _value_audit("third_attr:noisy", extra=", attributes: {lower: 1, upper: 0}"))
    err = _refused_by_audit(tmp_path, capsys, cfg, ("audits[0].mechanism.attributes:", "lower must be below upper"))
    assert "pairs[" not in err, err
