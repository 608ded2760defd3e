"""The pytest plugin `dpharness.testing` (entry point pytest11): assert_dp, assert_no_regression and
the dp_audit fixture, used from another project's test suite.

Every broken mechanism here is audited at a budget where the verifier's *computed* detection
probability (verifiers.power.audit_power: a provable lower bound for the automatic
select-then-certify audit with events="thresholds") is at least 1 - 1e-6, and every correct one at
alpha = 1e-6 (so a false failure on a fixed seed has probability <= 1e-6); the seeds fix the
outcome but are not what makes a test pass (docs/ci.md, "Two tiers").
"""

from __future__ import annotations

import math
import os
import re
import shutil
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import pandas as pd
import pytest

from dpharness import testing
from dpharness.verifiers import power
from dpharness.verifiers.controls import zoo

ROOT = Path(__file__).resolve().parents[1]
BASELINES = ROOT / "results" / "baselines"
MIN_POWER = 1 - 1e-6
ALPHA_CORRECT = 1e-6
#: Draws per dataset at which a Laplace mechanism of scale 0.5 audited at a 0.5-DP claim (true
#: epsilon 2) is flagged with computed probability >= 1 - 1e-6 at dpharness.testing's default
#: alpha (1 - 6.6e-7 at 1e-3; the zoo's laplace_inverted_scale at epsilon 0.5 is that law).
BROKEN_SAMPLES = 8000


def _broken_power(samples: int = BROKEN_SAMPLES, alpha: float = testing.DEFAULT_ALPHA) -> float:
    m = zoo.make("laplace_inverted_scale", epsilon=0.5)
    return power.audit_power(m, m.witness(), samples=samples, alpha=alpha)


# --------------------------------------------------------------------------------------------
# another project's test suite, run by pytest in a subprocess

LIBRARY = '''\
"""A throwaway library with a correct and a broken Laplace mechanism (query answer + noise)."""
import numpy as np
from dpharness.mechanisms import PrivacyClaim


class Laplace:
    """Correct: f(D) + Lap(1/epsilon) for a query of sensitivity 1."""

    kind = "real"

    def __init__(self, epsilon):
        self.epsilon = epsilon

    @property
    def claim(self):
        return PrivacyClaim(self.epsilon, neighbours="value", sensitivity=1.0)

    def sample(self, data, size=None, rng=None):
        return data + np.random.default_rng(rng).laplace(scale=1.0 / self.epsilon, size=size)


def broken_laplace(data, size, rng, epsilon=0.5):
    """Broken: the noise scale is epsilon instead of 1/epsilon (true epsilon 1/0.5 = 2)."""
    return data + rng.laplace(scale=epsilon, size=size)
'''

TESTS = '''\
from dpharness.testing import assert_dp

from mydp import Laplace, broken_laplace


def test_laplace_pair():
    assert_dp(Laplace(1.0), 0.0, 1.0, epsilon=1.0, alpha={alpha}, rng=11)


def test_laplace_search(dp_audit):
    dp_audit(Laplace(1.0), epsilon=1.0, alpha={alpha})


def test_broken_laplace(dp_audit):
    # budget {budget} x --dp-budget {scale} = {calls} calls: {samples} draws per dataset
    dp_audit(broken_laplace, 0.0, 1.0, epsilon=0.5, neighbours="value", sensitivity=1.0, budget={budget},
             events="thresholds")
'''

SEED = 20240611
SCALE = 0.5


def _project(tmp_path: Path) -> Path:
    proj = tmp_path / "project"
    (proj / "mydp").mkdir(parents=True)
    (proj / "tests").mkdir()
    (proj / "mydp" / "__init__.py").write_text(LIBRARY)
    budget = int(2 * BROKEN_SAMPLES / SCALE)
    (proj / "tests" / "test_mydp.py").write_text(TESTS.format(alpha=ALPHA_CORRECT, budget=budget, scale=SCALE,
                                                              calls=2 * BROKEN_SAMPLES, samples=BROKEN_SAMPLES))
    (proj / "pytest.ini").write_text("[pytest]\npythonpath = .\n")
    return proj


def _pytest(proj: Path, *args: str, autoload: bool = False) -> subprocess.CompletedProcess:
    """pytest in ``proj``; the plugin loaded with -p (entry-point autoload off, so the run does not
    depend on whether this editable install already has the entry point, nor on other plugins)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env["MPLBACKEND"] = "Agg"
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args]
    if not autoload:
        env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
        cmd[3:3] = ["-p", "dpharness.testing"]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=proj, env=env)


@pytest.fixture(scope="module")
def project_run(tmp_path_factory):
    assert _broken_power() >= MIN_POWER
    proj = _project(tmp_path_factory.mktemp("plugin"))
    junit = proj / "junit.xml"
    proc = _pytest(proj, "tests", f"--junitxml={junit}", "--dp-seed", str(SEED), "--dp-budget", str(SCALE))
    return proj, proc, junit


def _failure_block(out: str) -> str:
    m = re.search(r"_+ test_broken_laplace _+\n(.*?)\n(?:=+ |-+ Captured)", out, re.S)
    assert m, out
    return m.group(1)


def test_project_run_passes_correct_and_fails_broken_with_witness(project_run):
    proj, proc, _ = project_run
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert re.search(r"\b1 failed, 2 passed\b", out), out
    assert "FAILED tests/test_mydp.py::test_broken_laplace - dpharness.testing.DPViol" in out, out
    assert "def _assert_dp" not in out  # the plugin's frames are hidden (__tracebackhide__)
    block = _failure_block(out)
    for part in ("privacy claim VIOLATED by broken_laplace: claimed 0.5-DP (value neighbours)",
                 "pair:    d1 = 0.0, d2 = 1.0", "event:   E = {y ", "counts:  ", "seed:    ",
                 f"(derived from the session seed {SEED}, --dp-seed)",
                 f"replay in pytest:  pytest tests/test_mydp.py::test_broken_laplace --dp-seed {SEED} --dp-budget {SCALE:g}",
                 "verifiers.wrap(broken_laplace, epsilon=0.5, neighbours='value', sensitivity=1.0)",
                 "verifiers.audit(mech, 0.0, 1.0, samples="):
        assert part in block, block
    # the session seed in the header, the audits in the terminal summary
    assert f"dpharness: dp_audit session seed {SEED}, budget x{SCALE:g}" in out, out
    summary = out[out.index("dpharness audits"):]
    assert "test_laplace_pair: passed Laplace: no violation of 1-DP certified" in summary, summary
    assert "would have detected a privacy loss above" in summary
    assert "test_broken_laplace: VIOLATED broken_laplace" in summary


def test_project_junit_records_pass_with_power_and_failure_with_witness(project_run):
    _, proc, junit = project_run
    cases = {c.get("name"): c for c in ET.parse(junit).getroot().iter("testcase")}
    assert set(cases) == {"test_laplace_pair", "test_laplace_search", "test_broken_laplace"}, proc.stdout
    for name in ("test_laplace_pair", "test_laplace_search"):
        c = cases[name]
        assert c.find("failure") is None and c.find("error") is None
        props = {p.get("name"): p.get("value") for p in c.iter("property")}
        assert props["dp_violated"] == "False"
        assert float(props["dp_alpha"]) == ALPHA_CORRECT
        assert 0 < float(props["dp_detectable_epsilon"]) < math.inf
        assert 0 < float(props["dp_blind_delta"]) < 1
        assert "would have detected a privacy loss above" in props["dp_power"]
    fail = cases["test_broken_laplace"].find("failure")
    assert fail is not None
    # the message attribute carries the head of the report (recent pytest versions cut long messages
    # there and keep the whole report in the element text); the text carries all of it
    assert "VIOLATED" in fail.get("message") and "pair:" in fail.get("message"), fail.get("message")
    text = fail.text
    assert "VIOLATED" in text and "pair:" in text and "event:" in text and "counts:" in text, text
    assert f"--dp-seed {SEED}" in text and "verifiers.audit(" in text, text
    props = {p.get("name"): p.get("value") for p in cases["test_broken_laplace"].iter("property")}
    assert props["dp_violated"] == "True" and float(props["dp_epsilon_lower"]) > 0.5


def test_project_failure_replays_bit_for_bit(project_run):
    """The printed pytest command reproduces the failure exactly (same counts), alone; the printed
    Python snippet certifies the same counts again."""
    proj, proc, _ = project_run
    block = _failure_block(proc.stdout)
    cmd = re.search(r"replay in pytest:  pytest (\S+) --dp-seed (\d+) --dp-budget (\S+)", block)
    again = _pytest(proj, cmd.group(1), "--dp-seed", cmd.group(2), "--dp-budget", cmd.group(3))
    assert again.returncode == 1, again.stdout
    counts = re.search(r"counts:  .*", block).group(0)
    assert counts in _failure_block(again.stdout)

    # the Python replay: the snippet's lines as printed (it imports the function itself), run in a
    # fresh namespace with the project on the path, as a user would paste them
    sys.path.insert(0, str(proj))
    try:
        lines = block.splitlines()
        start = next(i for i, line in enumerate(lines) if "replay in Python" in line)
        end = next(i for i in range(start + 1, len(lines)) if "verifiers.audit(" in lines[i])
        body = [re.sub(r"^E\s+", "", line) for line in lines[start + 1:end + 1]]
        assert any(line.startswith("from mydp import broken_laplace") for line in body), body
        ns: dict = {}
        exec("\n".join(body[:-1]), ns)
        v = eval(body[-1], ns)
    finally:
        sys.path.remove(str(proj))
        sys.modules.pop("mydp", None)
    assert v.violated
    k1, d1, k2, d2 = map(int, re.search(r"(\d+) of (\d+) draws under d1, (\d+) of (\d+) under d2", counts).groups())
    assert v.witness.counts == (k1, k2) and v.witness.draws == (d1, d2)


def test_plugin_is_silent_unless_used_and_dp_marker_deselects(tmp_path):
    proj = tmp_path / "quiet"
    (proj / "tests").mkdir(parents=True)
    (proj / "tests" / "test_plain.py").write_text(textwrap.dedent("""\
        def test_plain():
            assert 1 + 1 == 2


        def test_audited(dp_audit):
            raise AssertionError("deselected by -m 'not dp': never runs")
        """))
    proc = _pytest(proj, "tests", "-m", "not dp", "--strict-markers")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert re.search(r"\b1 passed, 1 deselected\b", out), out
    assert "dpharness" not in out and "dp_audit" not in out and "dp-seed" not in out, out
    # options are registered, and a bad factor is a usage error naming the option
    bad = _pytest(proj, "tests", "--dp-budget", "0")
    assert bad.returncode == 4 and "--dp-budget must be a positive factor" in bad.stderr, bad.stderr
    help_ = _pytest(proj, "--help")
    assert "--dp-budget=FACTOR" in help_.stdout and "--dp-seed=SEED" in help_.stdout


def test_entry_point_loads_the_plugin_without_p(tmp_path):
    """pyproject's pytest11 entry point, as installed metadata, makes pytest load the plugin with no
    -p (a stand-in dist-info on PYTHONPATH carries the entry point, so the test does not depend on
    when this editable install was made; the wheel's own entry_points.txt is checked in
    tests/test_packaging.py). `-p no:dpharness` turns it off."""
    text = (ROOT / "pyproject.toml").read_text()
    m = re.search(r'\[project\.entry-points\.pytest11\]\n(\w+) = "([\w.]+)"', text)
    assert m and m.groups() == ("dpharness", "dpharness.testing"), text
    info = tmp_path / "site" / "dpharness_plugin_probe-0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: dpharness-plugin-probe\nVersion: 0\n")
    (info / "entry_points.txt").write_text(f"[pytest11]\n{m.group(1)} = {m.group(2)}\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path / "site"), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    run = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider"]
    on = subprocess.run([*run, "--help"], capture_output=True, text=True, timeout=300, cwd=tmp_path, env=env)
    assert "--dp-budget=FACTOR" in on.stdout, on.stdout + on.stderr
    off = subprocess.run([*run, "-p", "no:dpharness", "--help"], capture_output=True, text=True, timeout=300,
                         cwd=tmp_path, env=env)
    assert off.returncode == 0 and "--dp-budget" not in off.stdout, off.stdout + off.stderr


def test_import_is_light():
    """pytest imports the plugin in every session of every project with dpharness installed: no
    numpy, no verifiers/bench/mechanisms at import time."""
    code = ("import sys, dpharness.testing; bad = [m for m in sys.modules if m.split('.')[0] in "
            "('numpy', 'scipy', 'pandas', 'matplotlib') or m.startswith(('dpharness.verifiers', "
            "'dpharness.bench', 'dpharness.mechanisms'))]; print(bad); sys.exit(1 if bad else 0)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT / "tests")
    assert proc.returncode == 0, proc.stdout + proc.stderr


# --------------------------------------------------------------------------------------------
# assert_dp in-process


def test_assert_dp_flags_broken_mechanism_with_replayable_witness():
    assert _broken_power() >= MIN_POWER
    m = zoo.make("laplace_inverted_scale", epsilon=0.5)
    with pytest.raises(testing.DPViolation) as info:
        testing.assert_dp(m, 0.0, 1.0, epsilon=0.5, budget=2 * BROKEN_SAMPLES, events="thresholds", rng=7,
                          budget_scale=1.0)
    v = info.value.verdict
    assert isinstance(info.value, AssertionError) and v.violated and v.witness.seed == 7
    msg = str(info.value)
    assert "claimed 0.5-DP (value neighbours)" in msg and "seed:    7" in msg
    call = msg.splitlines()[-1].strip()
    assert call.startswith("verifiers.audit(mech, 0.0, 1.0, samples=") and call.endswith(f"rng=7, alpha={v.alpha!r})")
    from dpharness import verifiers
    again = eval(call, {"verifiers": verifiers, "math": math, "mech": m})
    # the replay line carries alpha: the same draws *and* the same bound
    assert again.violated and again.witness.counts == v.witness.counts and again.epsilon_lower == v.epsilon_lower


def test_assert_dp_audits_the_claim_passed_not_the_declared_one():
    # zoo laplace at epsilon 2 is Lap(0.5): held to a 0.5-DP claim it must fail (computed power
    # >= 1 - 1e-6: the same law and claim as laplace_inverted_scale at 0.5) ...
    m = zoo.make("laplace", epsilon=2.0)
    with pytest.raises(testing.DPViolation) as info:
        testing.assert_dp(m, 0.0, 1.0, epsilon=0.5, budget=2 * BROKEN_SAMPLES, events="thresholds", rng=8,
                          budget_scale=1.0)
    v = info.value.verdict
    assert v.epsilon_claimed == 0.5 and v.neighbours == "value"
    assert "it declares epsilon=2 (pure DP)" in str(info.value)
    # ... while the broken inverted-scale mechanism (true epsilon 2) passes a 2.5-DP claim.
    ok = testing.assert_dp(zoo.make("laplace_inverted_scale", epsilon=0.5), 0.0, 1.0, epsilon=2.5,
                           alpha=ALPHA_CORRECT, rng=9, budget_scale=1.0)
    assert ok.epsilon_claimed == 2.5 and not ok.violated
    assert testing.assert_dp(m, 0.0, 1.0, epsilon=2.0, alpha=ALPHA_CORRECT, rng=10,
                             budget_scale=1.0).epsilon_claimed == 2.0


def test_assert_dp_functions_sampler_objects_and_finite_outputs():
    def laplace(data, size, rng):
        return data + rng.laplace(scale=1.0, size=size)

    class SamplerOnly:
        def sample(self, data, size=None, rng=None):
            import numpy as np
            return data + np.random.default_rng(rng).laplace(scale=1.0, size=size)

    def randomized_response(bit, size, rng):  # keeps the bit w.p. e/(1+e): ln(e)-DP = 1-DP
        keep = rng.random(size) < math.e / (1 + math.e)
        return (keep == bool(bit)).astype(int)

    for target in (laplace, SamplerOnly()):
        v = testing.assert_dp(target, 0.0, 1.0, epsilon=1.0, neighbours="value", sensitivity=1.0,
                              alpha=ALPHA_CORRECT, rng=12, budget_scale=1.0)
        assert not v.violated and v.epsilon_claimed == 1.0
    v = testing.assert_dp(laplace, epsilon=1.0, neighbours="value", sensitivity=1.0, alpha=ALPHA_CORRECT, rng=13,
                          budget=8000, budget_scale=1.0)
    assert v.pairs_tried > 1 and v.calls <= 8000
    v = testing.assert_dp(randomized_response, 0, 1, epsilon=1.0, neighbours="bit", kind="finite",
                          alpha=ALPHA_CORRECT, rng=14, budget=8000, budget_scale=1.0)
    assert not v.violated


def test_assert_dp_budget_and_scale():
    def laplace(data, size, rng):
        return data + rng.laplace(scale=1.0, size=size)

    kw = dict(epsilon=1.0, neighbours="value", sensitivity=1.0, alpha=ALPHA_CORRECT, rng=15)
    v = testing.assert_dp(laplace, 0.0, 1.0, budget=4000, budget_scale=0.25, **kw)
    # 1000 calls: 150 selection draws per dataset, Poisson(350) certification draws per dataset
    assert abs(v.calls - 1000) <= 12 * math.sqrt(700), v.calls
    assert testing.assert_dp(laplace, budget=4000, budget_scale=0.5, **kw).calls <= 2000


@pytest.mark.parametrize("call, error, text", [
    (lambda f: testing.assert_dp(f, 0.0, epsilon=1.0), TypeError, "both d1 and d2"),
    (lambda f: testing.assert_dp(f, epsilon=1.0, budget=3), ValueError, "budget must be an integer"),
    (lambda f: testing.assert_dp(f, epsilon=1.0, budget_scale=0), ValueError, "budget_scale must be a positive"),
    (lambda f: testing.assert_dp(type("M", (), {}), epsilon=1.0), TypeError, "got the class M"),
    (lambda f: testing.assert_dp(42, epsilon=1.0), TypeError, "or a function fn(data, size, rng)"),
    (lambda f: testing.assert_dp(f, epsilon=-1.0), ValueError, "epsilon"),
])
def test_assert_dp_bad_arguments(call, error, text):
    def f(data, size, rng):
        return rng.random(size)

    with pytest.raises(error, match=re.escape(text)):
        call(f)


def test_dp_audit_seeds_depend_on_session_test_and_call_only():
    from dpharness.testing.session import Session, derive

    s = Session(seed=5)
    a = testing.DPAudit(s, "tests/test_x.py::test_a")
    assert a.seed == 5 and a.budget_scale == 1.0
    seeds = {derive(5, "tests/test_x.py::test_a", i) for i in range(3)}
    assert len(seeds) == 3 and derive(5, "t", 0) == derive(5, "t", 0) != derive(6, "t", 0)
    with pytest.raises(TypeError, match="--dp-seed"):
        a(lambda d, n, r: r.random(n), epsilon=1.0, rng=3)


# --------------------------------------------------------------------------------------------
# assert_no_regression on the committed baselines


@pytest.mark.parametrize("name", ["regress_duff_quick", "regress_private_mode"])
def test_assert_no_regression_baseline_against_itself(name):
    rep = testing.assert_no_regression(BASELINES / name, BASELINES / name)
    assert rep.exit_code == 0 and len(rep.cells) > 0 and not len(rep.regressions)


def test_assert_no_regression_flags_degraded_copy_with_table(tmp_path):
    # private_mode: twice the Monte Carlo error of one utility_loss cell (as tests/bench/test_verdicts.py)
    base = BASELINES / "regress_private_mode"
    new = tmp_path / "private_mode"
    shutil.copytree(base, new)
    res = pd.read_csv(new / "results.csv", dtype=str, keep_default_na=False)
    rows = res.index[res["metric"] == "utility_loss"][:1]
    res.loc[rows, "mc_error"] = [repr(float(v) * 2) for v in res.loc[rows, "mc_error"]]
    res.to_csv(new / "results.csv", index=False)
    with pytest.raises(testing.AccuracyRegression) as info:
        testing.assert_no_regression(new, base, alpha=0.01, tolerance=0.05)
    rep = info.value.report
    msg = str(info.value)
    assert len(rep.regressions) == 1 and "REGRESSION in 1 of" in msg
    assert msg.count(" REGRESSION ") + msg.count(" REGRESSION\n") >= 1 and "p-value" in msg
    assert f"replay: dpharness regress {new} {base} --alpha 0.01 --tolerance 0.05" in msg

    # duff_quick (same root seed: paired): every dataset of one cell 1.5 x the error
    base = BASELINES / "regress_duff_quick"
    new = tmp_path / "duff_quick"
    shutil.copytree(base, new)
    res = pd.read_csv(new / "results.csv", dtype=str, keep_default_na=False)
    cell = res["task"].str.rsplit("|", n=1).str[0]
    rows = res.index[cell == cell.iloc[0]]
    for col in ("mean_abs_error", "mean_abs_error_x100"):
        res.loc[rows, col] = [repr(float(v) * 1.5) for v in res.loc[rows, col]]
    res.to_csv(new / "results.csv", index=False)
    with pytest.raises(testing.AccuracyRegression) as info:
        testing.assert_no_regression(new, base)
    assert info.value.report.paired and len(info.value.report.regressions) == 1
    assert not (new / "regress.md").exists()
    testing.assert_no_regression(base, base, write_report=True)  # a baseline is never written into
    assert not (base / "regress.md").exists()


def test_assert_no_regression_unusable_input_is_not_a_regression(tmp_path):
    from dpharness.bench.regress import RegressionInputError

    with pytest.raises(RegressionInputError) as info:
        testing.assert_no_regression(tmp_path / "missing", BASELINES / "regress_private_mode")
    assert not isinstance(info.value, AssertionError)


NO_RNG_TESTS = '''\
from dpharness.testing import assert_dp

from mydp import Laplace, broken_laplace


def test_broken_without_rng():
    assert_dp(broken_laplace, 0.0, 1.0, epsilon=0.5, neighbours="value", sensitivity=1.0, budget={budget},
              events="thresholds")


def test_weak_budget():
    assert_dp(Laplace(1.0), 0.0, 1.0, epsilon=1.0, budget=400, alpha={alpha}, rng=3)
'''


@pytest.fixture(scope="module")
def no_rng_project(tmp_path_factory):
    proj = _project(tmp_path_factory.mktemp("norng"))
    (proj / "tests" / "test_mydp.py").write_text(NO_RNG_TESTS.format(budget=2 * BROKEN_SAMPLES, alpha=ALPHA_CORRECT))
    return proj


@pytest.mark.slow
def test_assert_dp_without_rng_replays_from_the_printed_command(no_rng_project):
    # without rng, assert_dp in pytest derives its seed from the session seed and the test id: the
    # printed `pytest NODEID --dp-seed SEED` reproduces the failure exactly
    assert _broken_power() >= MIN_POWER
    proc = _pytest(no_rng_project, "tests", "--dp-seed", str(SEED))
    out = proc.stdout
    m = re.search(r"_+ test_broken_without_rng _+\n(.*?)\n(?:=+ |-+ Captured)", out, re.S)
    assert m, out
    block = m.group(1)
    assert "not reproducible" not in block
    cmd = re.search(r"replay in pytest:  pytest (\S+) --dp-seed (\d+)", block)
    assert cmd and cmd.group(2) == str(SEED), block
    again = _pytest(no_rng_project, cmd.group(1), "--dp-seed", cmd.group(2))
    assert again.returncode == 1
    counts = re.search(r"counts:  .*", block).group(0)
    assert counts in again.stdout


@pytest.mark.slow
def test_underpowered_audit_warns_and_fails_under_dp_strict(no_rng_project):
    # 400 calls cannot detect a loss of 2 x epsilon: the pass says so (report and summary), and
    # --dp-strict turns it into a failure
    proc = _pytest(no_rng_project, "tests/test_mydp.py::test_weak_budget", "--dp-seed", str(SEED))
    assert proc.returncode == 0, proc.stdout
    assert "WARNING test_weak_budget" not in proc.stdout  # the record names the mechanism, not the test
    assert "WARNING Laplace: underpowered audit" in proc.stdout, proc.stdout
    strict = _pytest(no_rng_project, "tests/test_mydp.py::test_weak_budget", "--dp-seed", str(SEED), "--dp-strict")
    assert strict.returncode == 1 and "DPUnderpowered" in strict.stdout and "--dp-strict" in strict.stdout


@pytest.mark.slow
def test_dp_jobs_spreads_the_draws_and_keeps_the_verdict(no_rng_project):
    # --dp-jobs N: every audit's draws on N workers, the same counts for every N >= 1
    node = "tests/test_mydp.py::test_broken_without_rng"
    runs = [_pytest(no_rng_project, node, "--dp-seed", str(SEED), "--dp-jobs", j) for j in ("1", "2")]
    counts = []
    for r in runs:
        assert r.returncode == 1, r.stdout
        counts.append(re.search(r"counts:  .*", r.stdout).group(0))
    assert counts[0] == counts[1]
    bad = _pytest(no_rng_project, node, "--dp-jobs", "0")
    assert bad.returncode != 0 and "--dp-jobs must be" in bad.stderr
