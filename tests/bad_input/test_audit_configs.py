"""Bad audit configs and ``dpharness audit`` arguments: refused up front, exit 2, one message that
names the dotted path at fault, no traceback, no run folder.

Most cases call the CLI entry point in-process (``dpharness.bench.cli.main``, the function the
``dpharness`` script runs) and check the captured output with the corpus helper
:func:`assert_clean_error`; a few run the real command in a subprocess (exit code and stderr as a
user sees them).
"""

from __future__ import annotations

import math
import subprocess
from pathlib import Path

import pytest
import yaml

from conftest import ROOT, assert_clean_error, files_under, run_cli

from dpharness.bench.cli import main

ZOO_EM = {"zoo": "em"}
SS_MEDIAN = {"registry": "smooth_sensitivity_median", "epsilon": 1.0, "lower": 0.0, "upper": 10.0, "noise": "laplace",
             "delta": 0.001}


def audit(**kw):
    """One audit entry: em zoo mechanism, witness pair, 100 samples unless overridden."""
    return {"id": "a", "mechanism": dict(ZOO_EM), "pairs": "witness", "samples": [100], **kw}


def cfg(*audits, **top):
    return {"name": "bad", "seed": 1, **top, "audits": list(audits)}


# (case id, config mapping, strings the message must contain)
CASES = [
    ("epsilon_negative", cfg(audit(mechanism={"zoo": "laplace", "epsilon": -1})),
     ("audits[0].mechanism.epsilon", "> 0")),
    ("epsilon_nan", cfg(audit(mechanism={"zoo": "laplace", "epsilon": math.nan})), ("audits[0].mechanism.epsilon",)),
    ("epsilon_zero", cfg(audit(mechanism={"zoo": "em", "epsilon": 0})), ("audits[0].mechanism.epsilon",)),
    ("epsilon_text", cfg(audit(mechanism={"zoo": "em", "epsilon": "one"})), ("audits[0].mechanism.epsilon",)),
    ("delta_one", cfg(audit(mechanism={**SS_MEDIAN, "delta": 1}, pairs="search")),
     ("audits[0].mechanism.delta", "[0, 1)")),
    ("delta_negative", cfg(audit(mechanism={**SS_MEDIAN, "delta": -0.1}, pairs="search")),
     ("audits[0].mechanism.delta",)),
    ("sensitivity_zero", cfg(audit(mechanism={"zoo": "laplace", "sensitivity": 0})),
     ("audits[0].mechanism.sensitivity",)),
    ("zoo_param_misspelt", cfg(audit(mechanism={"zoo": "laplace", "epsilom": 1.0})),
     ("audits[0].mechanism.epsilom", "accepted: epsilon, sensitivity")),
    ("registry_param_misspelt", cfg(audit(mechanism={"registry": "exponential", "epsilom": 1.0}, pairs="search",
                                          samples=[1000])), ("audits[0].mechanism.epsilom", "accepted:")),
    ("peer_param_misspelt", cfg(audit(mechanism={"peer": "opendp_quantile", "stepp": 0.1}, pairs="search",
                                      samples=[1000])), ("audits[0].mechanism.stepp", "step")),
    ("registry_bad_value_built", cfg(audit(mechanism={"registry": "duff_median", "epsilon": 1.0, "lower": 5.0,
                                                      "upper": 1.0}, pairs="search", samples=[1000])),
     ("audits[0].mechanism.lower", "cannot build")),
    ("registry_missing_param", cfg(audit(mechanism={"registry": "duff_median", "epsilon": 1.0}, pairs="search",
                                         samples=[1000])), ("audits[0].mechanism", "missing required")),
    ("unknown_zoo", cfg(audit(mechanism={"zoo": "nope"})), ("audits[0].mechanism.zoo", "accepted:", "laplace")),
    ("unknown_registry", cfg(audit(mechanism={"registry": "nope"}, pairs="search")),
     ("audits[0].mechanism.registry", "accepted: all, ")),
    ("unknown_peer", cfg(audit(mechanism={"peer": "nope"}, pairs="search")),
     ("audits[0].mechanism.peer", "diffprivlib_median")),
    ("two_mechanism_kinds", cfg(audit(mechanism={"zoo": "em", "registry": "exponential"})),
     ("audits[0].mechanism", "exactly one of")),
    ("mechanism_missing", cfg({"id": "a", "pairs": "search", "samples": [100]}), ("audits[0].mechanism",)),
    ("pair_too_far_value", cfg(audit(mechanism={"zoo": "laplace"}, pairs=[[0, 5]])),
     ("audits[0].pairs[0]", "value neighbours", "sensitivity")),
    ("pair_too_far_scores", cfg(audit(pairs=[[[0, 4], [3, 0]]])), ("audits[0].pairs[0]", "score_linf")),
    ("pair_unequal_lengths_scores", cfg(audit(pairs=[[[0, 4], [1, 3, 5]]])), ("audits[0].pairs[0]", "same shape")),
    ("pair_unequal_lengths_replace_one", cfg(audit(mechanism=SS_MEDIAN, pairs=[[[1, 2, 3], [1, 2]]])),
     ("audits[0].pairs[0]", "equal sizes")),
    ("pair_two_records_added", cfg(audit(mechanism={"zoo": "duff_median"}, pairs=[[[5, 5], [0, 1, 5, 5]]])),
     ("audits[0].pairs[0]", "add_remove")),
    ("pair_of_strings", cfg(audit(pairs=[["a", "b"]])), ("audits[0].pairs[0][0]", "text")),
    # NaN is a record value now (NaN records compare equal); as a *score* it is still refused, by the
    # neighbour check of the mechanism's relation (em: score_linf)
    ("pair_with_nan", cfg(audit(pairs=[[[0, math.nan], [1, 3]]])), ("audits[0].pairs[0]", "finite")),
    ("pair_with_plus_inf", cfg(audit(pairs=[[[0, math.inf], [1, 3]]])), ("audits[0].pairs[0][0][1]", "+inf")),
    ("pair_of_three", cfg(audit(pairs=[[[0, 4], [1, 3], [2, 2]]])), ("audits[0].pairs[0]", "[d1, d2]")),
    ("samples_1e14", cfg(audit(samples="1e14")), ("audits[0].samples", "PB", "memory")),
    ("samples_list_1e12", cfg(audit(samples=[100, 10**12])), ("audits[0].samples[1]", "TB")),
    ("samples_too_few", cfg(audit(samples=[4])), ("audits[0].samples[0]", ">= 8")),
    ("samples_text", cfg(audit(samples=["many"])), ("audits[0].samples[0]", "integer")),
    ("repeat_zero", cfg(audit(repeat=0)), ("audits[0].repeat",)),
    ("repeat_huge", cfg(audit(repeat=10**9)), ("audits[0].repeat", "100000")),
    ("alpha_one", cfg(audit(), alpha=1), ("alpha", "(0, 1)")),
    ("audit_alpha_zero", cfg(audit(alpha=0)), ("audits[0].alpha",)),
    ("true_epsilon_negative", cfg(audit(true_epsilon=-1)), ("audits[0].true_epsilon",)),
    ("selection_above_one", cfg(audit(selection=1.5)), ("audits[0].selection",)),
    ("expect_unknown", cfg(audit(expect="maybe")), ("audits[0].expect", "correct, broken, calibration")),
    ("audit_key_unknown", cfg(audit(colour=1)), ("audits[0].colour", "accepted:")),
    ("top_key_unknown", {**cfg(audit()), "colour": 1}, ("colour", "accepted:")),
    ("duplicate_ids", cfg(audit(), audit()), ("audits[1].id", "duplicate")),
    ("generator_unknown", cfg(audit(pairs="search", generator="grid")), ("audits[0].generator", "scores")),
    ("generator_without_search", cfg(audit(generator="scores")), ("audits[0].generator", "search")),
    ("witness_for_registry", cfg(audit(mechanism={"registry": "exponential", "epsilon": 1.0})),
     ("audits[0].pairs", "witness pairs exist only for zoo")),
    ("registry_all_needs_search", cfg(audit(mechanism={"registry": "all"}, pairs=[[0, 1]])),
     ("audits[0].pairs", "registry: all")),
    ("audits_empty", cfg(), ("audits", "non-empty")),
    ("target_unknown_audit", {**cfg(audit()), "targets": [{"id": "T", "check": "violated", "audit": "zz"}]},
     ("targets[0].audit", "unknown audit id")),
    ("target_unknown_check", {**cfg(audit()), "targets": [{"id": "T", "check": "fast", "audit": "a"}]},
     ("targets[0].check",)),
    ("target_samples_not_run", {**cfg(audit()), "targets": [{"id": "T", "check": "violated", "audit": "a",
                                                              "samples": 1500}]}, ("targets[0].samples", "100")),
    ("target_missing_value", {**cfg(audit()), "targets": [{"id": "T", "check": "epsilon_lower_at_least",
                                                            "audit": "a"}]}, ("targets[0].value", "required")),
    ("every_mistake_at_once", cfg(audit(mechanism={"zoo": "laplace", "epsilon": -1}), {**audit(repeat=0), "id": "b"},
                                  {**audit(pairs=[[[0, 4], [3, 0]]]), "id": "c"}),
     ("audits[0].mechanism.epsilon", "audits[1].repeat", "2 mistakes")),
]


@pytest.fixture
def write(tmp_path):
    def _write(mapping, name="bad.yaml"):
        p = tmp_path / name
        p.write_text(yaml.safe_dump(mapping, sort_keys=False))
        return p
    return _write


def call(argv, capsys) -> subprocess.CompletedProcess:
    """``dpharness ARGV`` in-process, as a CompletedProcess for :func:`assert_clean_error`."""
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return subprocess.CompletedProcess(argv, code, out.out, out.err)


@pytest.mark.parametrize("mapping,names", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_audit_refuses_bad_config(tmp_path, write, capsys, mapping, names):
    path, out = write(mapping), tmp_path / "runs"
    before = files_under(tmp_path)
    proc = call(["audit", path, "--out", out], capsys)
    assert_clean_error(proc, code=2, names=(str(path), *names), before=before, watch=tmp_path)
    assert not out.exists()


@pytest.mark.parametrize("mapping,names", [c[1:] for c in CASES if c[0] in (
    "epsilon_negative", "pair_unequal_lengths_scores", "samples_1e14", "zoo_param_misspelt")],
    ids=["epsilon_negative", "pair_unequal_lengths_scores", "samples_1e14", "zoo_param_misspelt"])
def test_validate_refuses_bad_config(write, capsys, mapping, names):
    # validate builds every mechanism and checks every pair, as audit does before running
    path = write(mapping)
    proc = call(["validate", path], capsys)
    assert proc.returncode in (1, 2)  # `validate` reports invalid files with its own status
    assert_clean_error(proc, code=proc.returncode, names=(str(path), *names))


def test_every_mistake_is_one_line_each(write, capsys):
    path = write(dict(CASES[-1][1]))
    err = call(["audit", path], capsys).stderr
    assert err.startswith("error: ") and err.count("\n  audits[") == 2


def test_missing_peer_library_is_said_once(tmp_path, write, capsys, monkeypatch):
    import sys

    for mod in ("diffprivlib", "diffprivlib.mechanisms", "diffprivlib.tools", "diffprivlib.accountant", "opendp",
                "opendp.prelude", "pydp", "pydp.algorithms", "pydp.algorithms.laplacian"):
        monkeypatch.setitem(sys.modules, mod, None)
    peers = ["diffprivlib_median", "opendp_quantile", "pydp_median"]
    path = write(cfg(*[{"id": f"p{i}", "mechanism": {"peer": p}, "pairs": "search", "samples": [1000],
                        "exact": False} for i, p in enumerate(peers)]))
    before = files_under(tmp_path)
    proc = call(["audit", path, "--out", tmp_path / "r"], capsys)
    err = assert_clean_error(proc, code=2, names=("audits[0].mechanism.peer", "diffprivlib, opendp, python-dp",
                                                   "pip install -e '.[peers]'"), before=before, watch=tmp_path)
    # "not installed" without the extra; "fails to import" when the extra is installed (the imports
    # are blocked above): either way said once
    assert err.count("pip install") == 1 and err.count("not installed") + err.count("fails to import") == 1


@pytest.mark.parametrize("jobs", ["0", "-5"])
def test_audit_jobs_refused_like_run(tmp_path, write, capsys, jobs):
    path = write(cfg(audit()))
    before = files_under(tmp_path)
    proc = call(["audit", path, "--jobs", jobs, "--out", tmp_path / "r"], capsys)
    assert_clean_error(proc, code=2, names=("jobs", jobs), before=before, watch=tmp_path)


def test_quick_cap_error_is_reported_at_quick(tmp_path, write, capsys):
    path = write({**cfg(audit()), "quick": {"max_samples": 0}})
    proc = call(["audit", path, "--quick", "--out", tmp_path / "r"], capsys)
    assert_clean_error(proc, code=2, names=("quick.max_samples", ">= 8"))


def test_experiment_config_to_audit_names_run(tmp_path, capsys):
    path = Path(__file__).resolve().parents[2] / "configs" / "randomized_response.yaml"
    proc = call(["audit", path, "--out", tmp_path / "r"], capsys)
    assert_clean_error(proc, code=2, names=("dpharness run", "experiment config"), watch=tmp_path)


def test_file_that_is_neither_names_both_commands(tmp_path, write, capsys):
    path = write({"name": "x", "audit": [audit()]})  # misspelt `audits`
    proc = call(["audit", path, "--out", tmp_path / "r"], capsys)
    assert_clean_error(proc, code=2, names=("audits:", "dpharness run"))


# -- your own code (`callable:`), rows of records ----------------------------------------------------

GIVEN = [[[1, 2], [1]]]  # add_remove neighbours


def own(mech, **kw):
    """An audit of ``mechanism: {callable: ...}`` on one given add_remove pair."""
    return {"id": "a", "mechanism": mech, "pairs": GIVEN, "samples": [100], **kw}


OWN_CASES = [
    ("callable_missing_module", cfg(own({"callable": "no_such_pkg_dpharness.mech:f", "epsilon": 1})),
     ("audits[0].mechanism.callable", "no module named 'no_such_pkg_dpharness'")),
    ("callable_missing_attribute", cfg(own({"callable": "dpharness.verifiers:no_such_function", "epsilon": 1})),
     ("audits[0].mechanism.callable", "no attribute 'no_such_function'", "public names")),
    ("callable_claim_key_misspelt", cfg(own({"callable": "numpy:sum", "epsilom": 1})),
     ("audits[0].mechanism.epsilom", "did you mean 'epsilon'", "accepted: callable, epsilon, delta")),
    ("callable_epsilon_zero", cfg(own({"callable": "numpy:sum", "epsilon": 0})),
     ("audits[0].mechanism.epsilon", "> 0")),
    ("callable_delta_one", cfg(own({"callable": "numpy:sum", "epsilon": 1, "delta": 1})),
     ("audits[0].mechanism.delta", "[0, 1)")),
    ("callable_kind_unknown", cfg(own({"callable": "numpy:sum", "epsilon": 1, "kind": "vector"})),
     ("audits[0].mechanism.kind", "finite, real")),
    ("callable_attributes_not_mapping", cfg(own({"callable": "numpy:sum", "epsilon": 1, "attributes": [1]})),
     ("audits[0].mechanism.attributes", "mapping")),
    ("callable_not_callable", cfg(own({"callable": "math:pi", "epsilon": 1})),
     ("audits[0].mechanism.callable", "neither callable nor a mechanism")),
    ("callable_wrong_signature", cfg(own({"callable": "math:sqrt", "epsilon": 1})),
     ("audits[0].mechanism.callable", "wrong signature", "fn(data, size, rng)")),
    ("callable_without_claim", cfg(own({"callable": "numpy:sum"})), ("audits[0].mechanism.epsilon", "no claim")),
    ("callable_not_an_import_path", cfg(own({"callable": "numpy.sum", "epsilon": 1})),
     ("audits[0].mechanism.callable", "package.module:function")),
    ("callable_and_zoo", cfg(own({"callable": "numpy:sum", "zoo": "em"})), ("audits[0].mechanism", "exactly one of")),
    ("callable_witness_pairs", cfg(own({"callable": "numpy:sum", "epsilon": 1}, pairs="witness")),
     ("audits[0].pairs", "witness pairs exist only for zoo")),
    ("float_events_not_bool", cfg(audit(float_events="sometimes")), ("audits[0].float_events",)),
    ("rows_of_two_lengths", cfg(audit(mechanism=SS_MEDIAN, pairs=[[[[1, 2], [3]], [[1, 2], [3, 4]]]])),
     ("audits[0].pairs[0][0][1]", "has 1 values but", "one length")),
    ("rows_mixed_with_values", cfg(audit(mechanism=SS_MEDIAN, pairs=[[[[1, 2], 3], [[1, 2], [3, 4]]]])),
     ("audits[0].pairs[0][0][1]", "must be a row")),
    ("row_empty", cfg(audit(mechanism=SS_MEDIAN, pairs=[[[[]], [[1]]]])), ("audits[0].pairs[0][0][0]", "empty row")),
    ("row_with_plus_inf", cfg(audit(mechanism=SS_MEDIAN, pairs=[[[[1, math.inf]], [[1, 2]]]])),
     ("audits[0].pairs[0][0][0][1]", "+inf")),
    ("row_nested_too_deep", cfg(audit(mechanism=SS_MEDIAN, pairs=[[[[[1]]], [[1]]]])),
     ("audits[0].pairs[0][0][0][0]", "must be a number")),
]


@pytest.mark.parametrize("mapping,names", [c[1:] for c in OWN_CASES], ids=[c[0] for c in OWN_CASES])
def test_own_code_and_rows_refused_by_audit_and_validate(tmp_path, write, capsys, monkeypatch, mapping, names):
    import sys

    monkeypatch.setattr(sys, "path", list(sys.path))  # a callable's import puts the cwd on sys.path
    path, out = write(mapping), tmp_path / "runs"
    before = files_under(tmp_path)
    assert_clean_error(call(["audit", path, "--out", out], capsys), code=2, names=(str(path), *names), before=before,
                       watch=tmp_path)
    assert_clean_error(call(["validate", path], capsys), code=2, names=(str(path), *names))


# -- the real command, in a subprocess -------------------------------------------------------------

@pytest.mark.parametrize("case", ["samples_1e14", "pair_of_strings", "delta_one"])
def test_cli_subprocess_refuses(tmp_path, write, case):
    mapping, names = next(c[1:] for c in CASES if c[0] == case)
    path = write(mapping)
    before = files_under(tmp_path)
    proc = run_cli("audit", path, "--out", tmp_path / "r", cwd=tmp_path)
    assert_clean_error(proc, code=2, names=(str(path), *names), before=before, watch=tmp_path)


def test_cli_subprocess_jobs_zero(tmp_path, write):
    path = write(cfg(audit()))
    proc = run_cli("audit", path, "--jobs", "0", "--out", tmp_path / "r", cwd=tmp_path)
    assert_clean_error(proc, code=2, names=("jobs",), watch=tmp_path / "r")


def test_validate_says_a_missing_extra_and_keeps_the_other_verdicts(tmp_path, write, capsys, monkeypatch):
    # `dpharness validate configs/*.yaml` on the README's install (no peers extra): the peer config
    # is reported as not fully checked, with the install hint, and the command still exits 0
    import json
    import sys

    for mod in ("diffprivlib", "diffprivlib.mechanisms", "diffprivlib.tools", "diffprivlib.accountant", "opendp",
                "opendp.prelude", "pydp", "pydp.algorithms", "pydp.algorithms.laplacian"):
        monkeypatch.setitem(sys.modules, mod, None)
    peer = write(cfg({"id": "p0", "mechanism": {"peer": "diffprivlib_median"}, "pairs": "search",
                      "samples": [1000], "exact": False}))
    out = tmp_path / "v.json"
    proc = call(["validate", peer, str(ROOT / "configs" / "pumpkin.yaml"), "--json", str(out)], capsys)
    assert proc.returncode == 0, proc.stderr
    assert "skip" in proc.stdout and "'peers' extra" in proc.stdout and "pip install" in proc.stdout
    assert "ok  " in proc.stdout
    doc = json.loads(out.read_text())
    assert doc["verdict"]["passed"] and "not fully checked" in doc["verdict"]["message"]
    assert doc["configs"][0]["skipped"] and doc["configs"][0]["valid"]
    # a real mistake beside the missing extra is still a mistake
    bad = write(cfg({"id": "p0", "mechanism": {"peer": "diffprivlib_median"}, "pairs": "search",
                     "samples": [1000], "exact": False, "repeat": 0}))
    assert call(["validate", bad], capsys).returncode == 2


def test_a_search_budget_too_small_for_its_pairs_is_a_config_error(tmp_path, write, capsys):
    # checked by validate and before any run folder exists (it used to fail at run time, exit 1)
    path = write(cfg({"id": "s", "mechanism": {"registry": "exponential", "example": True}, "pairs": "search",
                      "samples": [50, 100000], "exact": False},
                     {"id": "t", "mechanism": {"suite": "statdp/SVT"}, "pairs": "suite", "samples": [40],
                      "exact": False}))
    before = files_under(tmp_path)
    for cmd in (["validate", path], ["audit", path, "--out", str(tmp_path / "r")]):
        proc = call(cmd, capsys)
        assert_clean_error(proc, code=2, names=("audits[0].samples[0]", "too small to search", "audits[1].samples",
                                                "give at least"), before=before, watch=tmp_path)


def test_family_alpha_is_split_by_dpharness_not_by_hand(tmp_path, write, capsys):
    # one level for the whole config: every audit task without its own alpha gets family / tasks, so a
    # 21st mechanism cannot silently break the family-wise level; alpha and family_alpha together are
    # refused
    from dpharness.bench.config import load_config

    path = write(cfg({"id": "a", "mechanism": {"zoo": "laplace", "epsilon": 1.0}, "samples": [2000, 8000],
                      "exact": False},
                     {"id": "b", "mechanism": {"zoo": "laplace", "epsilon": 1.0}, "samples": [2000], "repeat": 3,
                      "exact": False},
                     {"id": "c", "mechanism": {"zoo": "laplace", "epsilon": 1.0}, "samples": [2000], "alpha": 0.01,
                      "exact": False}, family_alpha=0.05))
    spec = load_config(path).spec
    each = 0.05 / (2 + 3)  # a: 2 sample sizes, b: 3 repeats; c keeps its own level
    assert spec.family_alpha == 0.05
    assert [a.alpha for a in spec.audits] == pytest.approx([each, each, 0.01])
    both = write(cfg({"id": "a", "mechanism": {"zoo": "laplace", "epsilon": 1.0}, "samples": [2000]},
                     family_alpha=0.05, alpha=0.01))
    assert_clean_error(call(["validate", both], capsys), code=2, names=("family_alpha", "not both"))
    bad = write(cfg({"id": "a", "mechanism": {"zoo": "laplace", "epsilon": 1.0}, "samples": [2000]}, family_alpha=2))
    assert_clean_error(call(["validate", bad], capsys), code=2, names=("family_alpha",))
