"""``mechanism: {callable: "package.module:name"}``: ``dpharness audit`` on another project's own code.

A throwaway project (``mypkg/mech.py`` with a correct Laplace count, a broken one and the object
forms, plus ``audits.yaml``) is written to tmp_path and the real command is run in it, with
``python -P`` so that the interpreter puts nothing on ``sys.path`` by itself: the project is found
only because dpharness puts the working directory (then the config's folder) there, as the
``dpharness`` console script would need.

Statistics. The broken count releases ``|D| + Lap(0.5)`` under a 0.5-DP claim: on the pair
([1, 2, 3], [1, 2]) that is the zoo's ``laplace_inverted_scale`` at epsilon 0.5 (Laplace of scale
0.5 on two points one apart, true epsilon 2) shifted by 2, and threshold events are
shift-equivariant; :func:`test_broken_control_is_detectable` computes (verifiers.power.audit_power,
a provable lower bound) that 8000 draws per dataset at alpha 1e-3 with ``events: thresholds`` flag it
with probability >= 1 - 1e-6. Every correct mechanism is audited at alpha 1e-6, so a false flag on
the fixed seed has probability <= 1e-6 per audit and repeat. The seeds fix the outcome; they are not
what makes the tests pass.
"""

from __future__ import annotations

import json
import os
import pickle
import re
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import numpy as np
import pytest
import yaml

from dpharness.bench.audits.build import CallableError, build_callable, resolve_callable
from dpharness.bench.audits.task import run_audit_task
from dpharness.bench.config import ConfigError, load_config

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "ci.md"
BROKEN_SAMPLES = 8000
BROKEN_ALPHA = 1e-3
CORRECT_ALPHA = 1e-6

MECH = '''\
"""A throwaway project's mechanisms (audited by dpharness from an audit config)."""
import os
import time
from pathlib import Path

from dpharness import verifiers

EPSILON = 0.5
WHERE = "cwd"


def noisy_count(data, size, rng):
    """Correct: |D| + Lap(1/epsilon); a count has add_remove sensitivity 1."""
    return len(data) + rng.laplace(scale=1.0 / EPSILON, size=size)


def broken_count(data, size, rng):
    """Broken: the scale is epsilon instead of 1/epsilon (true epsilon 1/0.5 = 2)."""
    return len(data) + rng.laplace(scale=EPSILON, size=size)


def slow_count(data, size, rng):
    """noisy_count that takes a while and notes which process ran it (for --jobs 2)."""
    time.sleep(0.1)
    with open(Path(__file__).resolve().parents[1] / "pids.txt", "a") as f:
        f.write(f"{os.getpid()}\\n")
    return noisy_count(data, size, rng)


def one_arg(data):
    return data


def raises(data, size, rng):
    raise RuntimeError("not implemented yet")


COUNT = verifiers.wrap(noisy_count, epsilon=EPSILON, sensitivity=1, name="count object")
NOT_CALLABLE = 3


def make_broken():
    """A zero-argument factory of a mechanism object."""
    return verifiers.wrap(broken_count, epsilon=EPSILON, sensitivity=1, name="broken object")


def make_nothing():
    return 42
'''

PAIR = [[[1, 2, 3], [1, 2]]]


def _count(aid: str, fn: str = "noisy_count", **kw) -> dict:
    return {"id": aid, "mechanism": {"callable": f"mypkg.mech:{fn}", "epsilon": 0.5, "sensitivity": 1},
            "pairs": PAIR, "events": "thresholds", "samples": [BROKEN_SAMPLES], "alpha": CORRECT_ALPHA, **kw}


#: What a project would keep in its repository: its mechanisms listed as correct, so the broken
#: one fails the run (exit 1); rows with a missing value and the object forms ride along.
AUDITS = {
    "name": "own_project",
    "seed": 11,
    "audits": [
        _count("count"),
        _count("broken", "broken_count", alpha=BROKEN_ALPHA),
        {"id": "rows", "mechanism": {"callable": "mypkg.mech:noisy_count", "epsilon": 0.5, "sensitivity": 1},
         "pairs": [[[[1, float("nan")], [2, 3]], [[1, float("nan")]]]], "events": "thresholds",
         "samples": [2000], "alpha": CORRECT_ALPHA},
        {"id": "object", "mechanism": {"callable": "mypkg.mech:COUNT"}, "pairs": PAIR, "events": "thresholds",
         "samples": [2000], "alpha": CORRECT_ALPHA},
        {"id": "factory", "mechanism": {"callable": "mypkg.mech:make_broken"}, "expect": "broken", "pairs": PAIR,
         "events": "thresholds", "samples": [BROKEN_SAMPLES], "alpha": BROKEN_ALPHA},
    ],
}

#: For --jobs 2: 12 tasks of about 0.3 s, sent to the two workers (the test turns the in-process
#: probe off: bench.run.runner.PROBE_SECONDS).
#: The slow count is correct: 12 repeats at alpha 1e-6 give a false flag with probability <= 1.2e-5.
PARALLEL = {
    "name": "own_parallel",
    "seed": 12,
    "audits": [
        _count("count"),
        _count("broken", "broken_count", alpha=BROKEN_ALPHA),
        {**_count("slow", "slow_count"), "samples": [1000], "repeat": 12},
    ],
}


def _project(root: Path, package: str = "mypkg", configs: dict | None = None) -> Path:
    (root / package).mkdir(parents=True)
    (root / package / "__init__.py").write_text("")
    (root / package / "mech.py").write_text(MECH)
    for name, cfg in (configs or {}).items():
        text = yaml.safe_dump(cfg, sort_keys=False).replace("mypkg.mech:", f"{package}.mech:")
        (root / name).write_text(text)
    return root


def _dpharness(*args: str, cwd: Path, timeout: float = 240) -> subprocess.CompletedProcess:
    """The real command; ``-P``: the interpreter does not put the working directory on sys.path."""
    env = {**os.environ, "MPLBACKEND": "Agg", "PYTHONWARNINGS": "ignore"}
    return subprocess.run([sys.executable, "-P", "-m", "dpharness", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env=env)


def _verdicts(path: Path) -> dict[str, dict]:
    return {a["audit"]: a for a in json.loads(path.read_text())["audits"]}


PREFIX = "ownproj_"


@pytest.fixture
def clean_imports(monkeypatch):
    """Undo what importing a throwaway package does to this process: sys.path, and the throwaway
    modules (only those: other modules first imported meanwhile, e.g. numpy's extension modules,
    cannot be imported twice in one process)."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    yield
    for name in [m for m in sys.modules if m.startswith(PREFIX)]:
        del sys.modules[name]


def _unique() -> str:
    return f"{PREFIX}{uuid.uuid4().hex[:10]}"


# -- the real command in a throwaway project -------------------------------------------------------

@pytest.mark.statistical
def test_broken_control_is_detectable():
    from dpharness.verifiers import power
    from dpharness.verifiers.controls import zoo

    m = zoo.make("laplace_inverted_scale", epsilon=0.5)  # the broken count's law on the pair (module doc)
    assert power.audit_power(m, m.witness(), samples=BROKEN_SAMPLES, alpha=BROKEN_ALPHA) >= 1 - 1e-6


@pytest.mark.statistical
def test_audit_own_project_flags_the_broken_count(tmp_path):
    proj = _project(tmp_path / "myproject", configs={"audits.yaml": AUDITS})
    proc = _dpharness("audit", "audits.yaml", "--out", "runs", "--json", "verdict.json", cwd=proj)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out  # a correct-claimed mechanism was flagged
    assert "Traceback" not in out
    v = _verdicts(proj / "verdict.json")
    assert v["broken"]["numbers"]["violations"] == 1 and not v["broken"]["passed"]
    assert v["broken"]["mechanism"] == "mypkg.mech:broken_count"
    assert v["factory"]["numbers"]["violations"] == 1 and v["factory"]["passed"]  # expect: broken, flagged
    for aid in ("count", "rows", "object"):
        assert v[aid]["numbers"]["violations"] == 0 and v[aid]["passed"], (aid, v[aid])
    assert re.search(r"FAIL: broken\b", out) and "FAIL: count" not in out


@pytest.mark.slow
@pytest.mark.statistical
def test_audit_own_project_with_two_workers(tmp_path, monkeypatch):
    # workers from the first chunk: whether the run would start them itself depends on how busy the
    # machine is (bench.run.runner: PROBE_SECONDS, bench.run.cpu_share)
    monkeypatch.setenv("DPHARNESS_PROBE_SECONDS", "0")
    proj = _project(tmp_path / "myproject", configs={"parallel.yaml": PARALLEL})
    proc = _dpharness("audit", "parallel.yaml", "--jobs", "2", "--out", "runs", "--json", "verdict.json", cwd=proj)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1 and "Traceback" not in out, out
    v = _verdicts(proj / "verdict.json")
    assert v["broken"]["numbers"]["violations"] == 1
    assert v["count"]["numbers"]["violations"] == 0 and v["slow"]["numbers"]["violations"] == 0
    assert v["slow"]["numbers"]["repeats"] == 12
    manifest = json.loads(next((proj / "runs").rglob("manifest.json")).read_text())
    assert manifest["jobs"] == 2, manifest.get("parallelism_note")
    # the mechanism ran in more than one process: the worker processes imported mypkg themselves
    assert len(set((proj / "pids.txt").read_text().split())) >= 2


def test_validate_names_what_is_wrong_with_the_callable(tmp_path):
    """Each broken config on its own file; one `validate` call reports every file (exit 2)."""
    def one(mech: dict, pairs=PAIR) -> dict:
        return {"audits": [{"id": "a", "mechanism": mech, "pairs": pairs, "samples": [100]}]}

    fn = {"epsilon": 0.5, "sensitivity": 1}
    cases = {
        "missing_module.yaml": (one({"callable": "mypkg.mehc:noisy_count", **fn}),
                                ["audits[0].mechanism.callable", "no module named 'mypkg.mehc'"]),
        "missing_package.yaml": (one({"callable": "notmypkg.mech:noisy_count", **fn}),
                                 ["audits[0].mechanism.callable", "no module named 'notmypkg'"]),
        "missing_attribute.yaml": (one({"callable": "mypkg.mech:noisy_cout", **fn}),
                                   ["audits[0].mechanism.callable", "no attribute 'noisy_cout'",
                                    "did you mean 'noisy_count'"]),
        "bad_claim_key.yaml": (one({"callable": "mypkg.mech:noisy_count", "epsilom": 0.5}),
                               ["audits[0].mechanism.epsilom", "accepted: callable, epsilon"]),
        "epsilon_negative.yaml": (one({"callable": "mypkg.mech:noisy_count", "epsilon": -1}),
                                  ["audits[0].mechanism.epsilon", "> 0"]),
        "neighbours_unknown.yaml": (one({"callable": "mypkg.mech:noisy_count", "epsilon": 1, "neighbours": "rows"}),
                                    ["audits[0].mechanism.neighbours", "add_remove"]),
        "no_epsilon.yaml": (one({"callable": "mypkg.mech:noisy_count"}),
                            ["audits[0].mechanism.epsilon", "no claim is given"]),
        "wrong_signature.yaml": (one({"callable": "mypkg.mech:one_arg", **fn}),
                                 ["audits[0].mechanism.callable", "wrong signature", "one_arg(data)"]),
        "not_callable.yaml": (one({"callable": "mypkg.mech:NOT_CALLABLE"}),
                              ["audits[0].mechanism.callable", "neither callable nor a mechanism"]),
        "object_with_claim.yaml": (one({"callable": "mypkg.mech:COUNT", "epsilon": 2.0}),
                                   ["audits[0].mechanism.epsilon", "its own claim"]),
        "factory_of_nothing.yaml": (one({"callable": "mypkg.mech:make_nothing"}),
                                    ["audits[0].mechanism.callable", "make_nothing() returned int"]),
        "raises.yaml": (one({"callable": "mypkg.mech:raises", **fn}),
                        ["audits[0].pairs[0][0]", "RuntimeError: not implemented yet"]),
        "raises_search.yaml": (one({"callable": "mypkg.mech:raises", **fn}, pairs="search"),
                               ["audits[0].mechanism.callable", "RuntimeError: not implemented yet"]),
        "not_an_import_path.yaml": (one({"callable": "mypkg/mech.py", **fn}),
                                    ["audits[0].mechanism.callable", "package.module:function"]),
    }
    proj = _project(tmp_path / "myproject", configs={k: c for k, (c, _) in cases.items()})
    proc = _dpharness("validate", *cases, cwd=proj)
    err = proc.stderr
    assert proc.returncode == 2 and "Traceback" not in err + proc.stdout, err
    messages = [m for m in re.split(r"^error: ", err, flags=re.M) if m.strip()]  # one per file, in order
    assert len(messages) == len(cases), err
    for (name, (_, names)), msg in zip(cases.items(), messages):
        assert msg.startswith(f"{name}: ")
        for n in names:
            assert n in msg, (name, n, msg)


def test_audit_refuses_before_any_run_folder(tmp_path):
    cfg = {"audits": [{"id": "a", "mechanism": {"callable": "mypkg.mech:nope", "epsilon": 1}, "pairs": PAIR,
                       "samples": [100]}]}
    proj = _project(tmp_path / "myproject", configs={"bad.yaml": cfg})
    proc = _dpharness("audit", "bad.yaml", "--out", "runs", cwd=proj)
    assert proc.returncode == 2 and "audits[0].mechanism.callable" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr and not (proj / "runs").exists()


# -- the worked example of docs/ci.md, exactly as written ------------------------------------------

def _doc_files() -> dict[str, str]:
    text = DOC.read_text(encoding="utf-8")
    blocks = re.findall(r"<!-- own-project: (\S+) -->\s*```\w+\n(.*?)```\s*<!-- /own-project -->", text, re.S)
    assert {name for name, _ in blocks} == {"mypkg/mech.py", "audits.yaml"}, "docs/ci.md lost its worked example"
    return dict(blocks)


@pytest.mark.slow
@pytest.mark.statistical
def test_docs_ci_worked_example_runs(tmp_path):
    proj = tmp_path / "myproject"
    (proj / "mypkg").mkdir(parents=True)
    (proj / "mypkg" / "__init__.py").write_text("")
    for name, body in _doc_files().items():
        (proj / name).write_text(body)
    # the config's folder is searched too: validating from the parent folder finds mypkg
    proc = _dpharness("validate", "myproject/audits.yaml", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    # --quick: the correct count at 8000 draws and a 20000-call search, each at the file's alpha
    # 1e-3 (a false flag has probability <= 1e-3 each); the control at 8000 draws and alpha 1e-3 is
    # flagged with probability >= 1 - 1e-6 (test_broken_control_is_detectable: the same law)
    proc = _dpharness("audit", "audits.yaml", "--quick", "--out", "runs", "--json", "v.json", cwd=proj)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    v = _verdicts(proj / "v.json")
    assert v["wrong_scale_control"]["numbers"]["violations"] == 1
    assert v["noisy_count"]["numbers"]["violations"] == 0 and v["noisy_count_search"]["numbers"]["violations"] == 0


def test_docs_ci_gives_both_install_lines():
    text = DOC.read_text(encoding="utf-8")
    assert "pip install -e /path/to/dpharness" in text
    assert re.search(r'pip install "dpharness @ git\+https://\S+"', text)
    assert "point the commands at your own audit configs (a `wrap`ped" not in text


# -- in-process: where the module is found, and a worker's own import ------------------------------

def test_spec_records_the_working_directory_then_the_config_folder(tmp_path, monkeypatch, clean_imports):
    pkg = _unique()
    proj = _project(tmp_path / "proj", pkg)
    conf = tmp_path / "proj" / "conf"
    _project(conf, pkg)  # the same package name beside the config, with another WHERE
    (conf / pkg / "mech.py").write_text(MECH.replace('WHERE = "cwd"', 'WHERE = "config"'))
    (conf / "a.yaml").write_text(yaml.safe_dump(
        {"audits": [{"id": "a", "mechanism": {"callable": f"{pkg}.mech:COUNT"}, "pairs": PAIR, "samples": [100]}]}))
    monkeypatch.chdir(proj)
    (a,) = load_config(conf / "a.yaml").spec.audits
    assert a.import_paths == (os.getcwd(), str(conf.resolve()))
    assert resolve_callable(f"{pkg}.mech:WHERE", a.import_paths) == "cwd"  # the working directory first


def test_config_folder_is_used_from_elsewhere(tmp_path, monkeypatch, clean_imports):
    pkg = _unique()
    conf = _project(tmp_path / "conf", pkg)
    (conf / "a.yaml").write_text(yaml.safe_dump(
        {"audits": [{"id": "a", "mechanism": {"callable": f"{pkg}.mech:WHERE"}, "pairs": PAIR, "samples": [100]}]}))
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    (a,) = load_config(conf / "a.yaml").spec.audits
    assert resolve_callable(a.mechanism["callable"], a.import_paths) == "cwd"  # (mech.py's own WHERE text)
    assert str(conf.resolve()) in sys.path


def test_task_imports_the_module_itself_like_a_fresh_worker(tmp_path, monkeypatch, clean_imports):
    """What a loky worker does: it gets the pickled spec, in a process where the project's folder
    is not on sys.path and the module was never imported."""
    pkg = _unique()
    proj = _project(tmp_path / "proj", pkg, configs={"a.yaml": {"audits": [_count("count")]}})
    monkeypatch.chdir(proj)
    cfg = load_config(proj / "a.yaml")
    from dpharness.bench.audits import build

    build.check(cfg.spec)  # validation imports it in this process
    (a,) = pickle.loads(pickle.dumps(cfg.spec)).audits
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    for p in a.import_paths:
        while p in sys.path:
            sys.path.remove(p)
    for name in [m for m in sys.modules if m == pkg or m.startswith(pkg + ".")]:
        del sys.modules[name]
    row = run_audit_task(a, 1000, 0, np.random.default_rng(0))
    assert row["mechanism"] == f"{pkg}.mech:noisy_count" and row["calls"] > 0
    assert f"{pkg}.mech" in sys.modules


def test_float_events_key_reaches_the_verifier(tmp_path, monkeypatch, clean_imports):
    from dpharness import verifiers

    pkg = _unique()
    cfg = {"audits": [{**_count("on"), "float_events": True}, _count("default"),
                      {**_count("search_off"), "pairs": "search", "samples": [2000], "float_events": False}]}
    proj = _project(tmp_path / "proj", pkg, configs={"a.yaml": cfg})
    monkeypatch.chdir(proj)
    seen: list = []
    real_audit, real_search = verifiers.audit, verifiers.search

    def spy(real):
        def call(*args, **kw):
            seen.append(kw.get("float_events", "absent"))
            return real(*args, **kw)
        return call

    monkeypatch.setattr(verifiers, "audit", spy(real_audit))
    monkeypatch.setattr(verifiers, "search", spy(real_search))
    on, default, off = load_config(proj / "a.yaml").spec.audits
    assert (on.float_events, default.float_events, off.float_events) == (True, None, False)
    for a in (on, default, off):
        run_audit_task(a, a.samples[0], 0, np.random.default_rng(0))
    assert seen == [True, "absent", False]  # absent: the mechanism's own default


def test_object_forms_and_claim_keys(tmp_path, monkeypatch, clean_imports):
    pkg = _unique()
    proj = _project(tmp_path / "proj", pkg)
    paths = (str(proj),)
    m = build_callable({"callable": f"{pkg}.mech:COUNT"}, paths)
    assert m.name == "count object" and m.claim.epsilon == 0.5
    made = build_callable({"callable": f"{pkg}.mech:make_broken"}, paths)
    assert made.name == "broken object"
    wrapped = build_callable({"callable": f"{pkg}.mech:noisy_count", "epsilon": 2, "delta": 1e-6,
                              "neighbours": "replace_one", "sensitivity": 1, "kind": "real",
                              "attributes": {"lower": 0, "upper": 1}, "float_events": True}, paths)
    assert (wrapped.claim.epsilon, wrapped.claim.delta, wrapped.claim.neighbours) == (2, 1e-6, "replace_one")
    assert wrapped.float_events and wrapped.lower == 0 and wrapped.name == f"{pkg}.mech:noisy_count"
    with pytest.raises(CallableError, match="its own claim") as e:
        build_callable({"callable": f"{pkg}.mech:COUNT", "float_events": True}, paths)
    assert e.value.key == "float_events" and "of the audit itself" in str(e.value)


def test_keys_wrap_does_not_accept_are_named(tmp_path, monkeypatch, clean_imports):
    """input_domain / privacy_map / input_metric reach wrap only where its signature has them."""
    import inspect

    from dpharness import verifiers

    pkg = _unique()
    proj = _project(tmp_path / "proj", pkg)
    resolve_callable(f"{pkg}.mech:COUNT", (str(proj),))  # imported now: the module calls wrap itself
    accepted = inspect.signature(verifiers.wrap).parameters
    for key in ("privacy_map", "input_metric", "input_domain"):
        if key in accepted:
            continue
        with pytest.raises(CallableError, match=f"does not accept {key}") as e:
            build_callable({"callable": f"{pkg}.mech:noisy_count", "epsilon": 1, key: "x"}, (str(proj),))
        assert e.value.key == key

    def old_wrap(fn, *, epsilon, delta=0.0, neighbours="add_remove", kind="real", sensitivity=None, name="",
                 attributes=None, float_events=False):  # a wrap without the new keys
        raise AssertionError("not reached")

    monkeypatch.setattr(verifiers, "wrap", old_wrap)
    with pytest.raises(CallableError, match="does not accept input_domain"):
        build_callable({"callable": f"{pkg}.mech:noisy_count", "epsilon": 1, "input_domain": [0, 1]}, (str(proj),))


def test_rows_and_nan_in_pairs_are_records(monkeypatch, tmp_path, clean_imports):
    pkg = _unique()
    proj = _project(tmp_path / "proj", pkg)
    monkeypatch.chdir(proj)
    text = textwrap.dedent(f"""\
        audits:
          - id: rows
            mechanism: {{callable: "{pkg}.mech:noisy_count", epsilon: 1, sensitivity: 1}}
            pairs: [[[[1, .nan], [2, 3]], [[1, .nan]]], [[1, nan, 2], [1, 2]]]
            samples: [100]
        """)
    (proj / "rows.yaml").write_text(text)
    (a,) = load_config(proj / "rows.yaml").spec.audits
    (r1, _), (v1, _) = a.pairs
    assert len(r1) == 2 and len(r1[0]) == 2 and np.isnan(r1[0][1]) and np.isnan(v1[1])
    from dpharness.bench.audits import build

    build.check(load_config(proj / "rows.yaml").spec)  # the neighbour relation accepts them
    with pytest.raises(ConfigError, match=r"pairs\[0\]\[0\]\[1\]: has 3 values but"):
        (proj / "bad.yaml").write_text(text.replace("[2, 3]]", "[2, 3, 4]]"))
        load_config(proj / "bad.yaml")


def _own_project(tmp_path, monkeypatch, module: str, code: str, audits: str) -> str:
    """``<module>.py`` holding ``code`` and a config ``c.yaml`` whose ``audits:`` list is ``audits``
    (YAML text, one audit per line), in a project folder that becomes the working directory."""
    (tmp_path / f"{module}.py").write_text(code, encoding="utf-8")
    cfg = tmp_path / "c.yaml"
    cfg.write_text(audits, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return str(cfg)


@pytest.mark.parametrize("where", ["import", "call"])
def test_sys_exit_in_user_code_is_an_error_not_a_green_step(tmp_path, monkeypatch, capsys, where):
    """A module that exits when imported (a script's argv handling) or a function that calls
    sys.exit(0): validate and audit exit 2 naming it, never 0 with nothing audited."""
    from dpharness.bench.cli import main

    body = ("import sys\nsys.exit(0)\n" if where == "import" else "import sys\n") + (
        "def noisy(data, size, rng):\n    sys.exit(0)\n")
    cfg = _own_project(tmp_path, monkeypatch, "exiting", body,
                       "audits:\n  - {id: a, mechanism: {callable: 'exiting:noisy', epsilon: 1.0, neighbours: value}, "
                       "pairs: [[0.0, 1.0]], samples: [1000]}\n")
    for cmd in (["validate", cfg], ["audit", cfg, "--out", "runs"]):
        assert main(cmd) == 2, cmd
        assert "sys.exit(0)" in capsys.readouterr().err
    assert not (tmp_path / "runs").exists()


def test_a_search_that_loses_most_pairs_to_the_mechanisms_exceptions_fails(tmp_path, monkeypatch, capsys):
    """User code that raises KeyError on every generated dataset but one: the search skips those
    pairs (they are not the user's), and the run says so and exits 1 instead of "as expected"."""
    from dpharness.bench.cli import main

    cfg = _own_project(tmp_path, monkeypatch, "picky",
                       "import numpy as np\n"
                       "def noisy_count(data, size, rng):\n"
                       "    if len(data) not in (1, 2):\n"
                       "        raise KeyError('row')\n"
                       "    return len(data) + rng.laplace(0.0, 1.0, size)\n",
                       "audits:\n  - {id: a, mechanism: {callable: 'picky:noisy_count', epsilon: 1.0, sensitivity: 1.0}, "
                       "pairs: search, samples: [20000]}\n")
    assert main(["audit", cfg, "--out", "runs"]) == 1
    out = capsys.readouterr().out
    assert "the mechanism raised on" in out and "KeyError" in out


def test_labels_are_given_pairs_of_a_local_mechanism(tmp_path, monkeypatch):
    """`pairs: [[a, b]]` for a mechanism on one label (randomized response over {a, b}): accepted
    as data, checked against the declared relation, audited (docs/configs.md says labels are data)."""
    from dpharness.bench.cli import main

    cfg = _own_project(tmp_path, monkeypatch, "rr",
                       "import numpy as np\n"
                       "def rr(data, size, rng):\n"
                       "    keep = rng.random(size) < np.e / (1 + np.e)\n"
                       "    other = 'b' if data == 'a' else 'a'\n"
                       "    return np.where(keep, data, other)\n",
                       "family_alpha: 0.001\naudits:\n  - {id: rr, mechanism: {callable: 'rr:rr', epsilon: 1.0, "
                       "neighbours: local, kind: finite, input_domain: [a, b]}, pairs: [[a, b]], samples: [20000]}\n")
    assert main(["validate", cfg]) == 0
    assert main(["audit", cfg, "--out", "runs"]) == 0


@pytest.mark.parametrize("body", ["return 1.0", "return rng.laplace(0.0, 1.0, size - 1)",
                                  "return [[1.0]] + [[1.0, 2.0]] * (size - 1)"])
def test_validate_checks_the_shape_of_several_draws(tmp_path, monkeypatch, capsys, body):
    """One value whatever size, one value too few, ragged rows: validate fails (exit 2, naming the
    callable) instead of audit failing after a run folder exists."""
    from dpharness.bench.cli import main

    cfg = _own_project(tmp_path, monkeypatch, "shapes", f"def noisy(data, size, rng):\n    {body}\n",
                       "audits:\n  - {id: a, mechanism: {callable: 'shapes:noisy', epsilon: 1.0, neighbours: value}, "
                       "pairs: [[0.0, 1.0]], samples: [1000]}\n")
    assert main(["validate", cfg]) == 2
    assert "must return" in capsys.readouterr().err


def test_a_privacy_map_by_import_path_is_the_claim_of_a_callable(tmp_path, monkeypatch, capsys):
    """`privacy_map: "m:pmap"` with `input_metric:` is the claim (no epsilon needed), resolved like the
    callable; a misspelt map is named at `privacy_map` with its did-you-mean."""
    from dpharness.bench.cli import main

    body = ("family_alpha: 0.001\naudits:\n  - {id: a, mechanism: {callable: 'm:noisy_count', privacy_map: 'm:MAP', "
            "input_metric: symmetric_distance}, pairs: search, samples: [20000]}\n")
    cfg = _own_project(tmp_path, monkeypatch, "m",
                       "def noisy_count(data, size, rng):\n    return len(data) + rng.laplace(0.0, 1.0, size)\n"
                       "def pmap(d_in):\n    return float(d_in)\n", body.replace("MAP", "pmap"))
    assert main(["validate", cfg]) == 0
    assert main(["audit", cfg, "--out", "runs"]) == 0
    (tmp_path / "c.yaml").write_text(body.replace("MAP", "pmapp"), encoding="utf-8")
    assert main(["validate", cfg]) == 2
    assert "mechanism.privacy_map" in capsys.readouterr().err


def test_a_mechanism_that_releases_only_nan_fails_the_audit(tmp_path, monkeypatch, capsys):
    """Every release NaN: the audit compared NaN with NaN; the run says so and exits 1."""
    from dpharness.bench.cli import main

    cfg = _own_project(tmp_path, monkeypatch, "nans",
                       "import numpy as np\ndef noisy(data, size, rng):\n    return np.full(size, np.nan)\n",
                       "audits:\n  - {id: a, mechanism: {callable: 'nans:noisy', epsilon: 1.0, neighbours: value}, "
                       "pairs: [[0.0, 1.0]], samples: [2000]}\n")
    assert main(["audit", cfg, "--out", "runs"]) == 1
    assert "released only NaN" in capsys.readouterr().out
