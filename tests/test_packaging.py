"""Packaging: one `dpharness` import namespace, no generic top-level name installed.

The wheel is built from this checkout and installed into a fresh virtual environment next to an
unrelated distribution that owns a top-level ``verifiers`` package (one such package exists on the
package index). Both must work side by side, an audit must run, and uninstalling either must leave
the other intact.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import textwrap
import zipfile
from pathlib import Path

import pytest

import dpharness

# wheels are built and installed into fresh environments: the thorough tier
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]


def test_version_is_the_distribution_version():
    from importlib import metadata

    assert dpharness.__version__ == metadata.version("dpharness")
    out = subprocess.run([sys.executable, "-m", "dpharness", "--version"], capture_output=True, text=True,
                         timeout=60, cwd=ROOT / "tests")
    assert out.returncode == 0 and out.stdout.strip() == f"dpharness {dpharness.__version__}"


def _run(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, **kw)
    assert proc.returncode == 0, f"{' '.join(map(str, cmd))} failed:\n{proc.stdout}\n{proc.stderr}"
    return proc


def _pip(*args: str, target: Path | None = None) -> subprocess.CompletedProcess:
    """This environment's pip (which has setuptools for building), optionally aimed at another
    interpreter with ``--python`` so the fresh venv needs no pip of its own."""
    base = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--no-input"]
    if target is not None:
        base += ["--python", str(target)]
    return _run([*base, *args])


@pytest.fixture(scope="module")
def wheels(tmp_path_factory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("wheels")
    # Built from a copy of the source (a build/ folder left in the checkout by an earlier build
    # would otherwise leak stale modules into the wheel), as users build it: in an isolated build
    # environment with setuptools from the package index.
    src = tmp_path_factory.mktemp("src") / "dpharness"
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(".git", "build", "results", "*.egg-info", ".venv",
                                                             "__pycache__", ".pytest_cache", ".hypothesis"))
    _pip("wheel", "--no-deps", "-w", str(out), str(src))
    other = tmp_path_factory.mktemp("other_src")
    (other / "verifiers").mkdir()
    # An unrelated project with the same top-level name and none of our attributes.
    (other / "verifiers" / "__init__.py").write_text('"""Someone else\'s verifiers."""\nOWNER = "other"\n')
    (other / "pyproject.toml").write_text(textwrap.dedent("""\
        [build-system]
        requires = ["setuptools>=61"]
        build-backend = "setuptools.build_meta"
        [project]
        name = "verifiers"
        version = "9.9.9"
        [tool.setuptools]
        packages = ["verifiers"]
        """))
    _pip("wheel", "--no-deps", "-w", str(out), str(other))
    found = {p.name.split("-")[0]: p for p in out.glob("*.whl")}
    assert set(found) == {"dpharness", "verifiers"}, found
    return found


@pytest.mark.slow
def test_wheel_installs_only_the_dpharness_namespace(wheels):
    names = zipfile.ZipFile(wheels["dpharness"]).namelist()
    tops = {n.split("/")[0] for n in names}
    assert tops == {"dpharness", f"dpharness-{dpharness.__version__}.dist-info"}, tops
    for layer in ("mechanisms", "verifiers", "bench"):
        assert f"dpharness/{layer}/__init__.py" in names
    assert "dpharness/bench/experiments/__init__.py" in names
    # every package folder of the source tree made it into the wheel
    for layer in ("mechanisms", "verifiers", "bench"):
        for init in (ROOT / layer).rglob("__init__.py"):
            rel = init.relative_to(ROOT / layer).as_posix()
            assert f"dpharness/{layer}/{rel}" in names, f"{layer}/{rel} is not packaged (pyproject packages)"
    # the JSON Schemas of the --json verdicts are package data
    schemas = sorted((ROOT / "bench" / "schemas").glob("*.json"))
    assert schemas
    for s in schemas:
        assert f"dpharness/bench/schemas/{s.name}" in names, f"{s.name} is not packaged (pyproject package-data)"


def test_wheel_ships_the_pytest_plugin(wheels):
    """dpharness.testing is in the wheel and registered as a pytest plugin (entry point pytest11)."""
    zf = zipfile.ZipFile(wheels["dpharness"])
    names = zf.namelist()
    for module in sorted((ROOT / "dpharness" / "testing").glob("*.py")):  # the package, every module of it
        assert f"dpharness/testing/{module.name}" in names, f"testing/{module.name} is not packaged"
    eps = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    text = zf.read(eps).decode()
    assert "[pytest11]\ndpharness = dpharness.testing" in text, text


AUDIT = textwrap.dedent("""\
    name: side_by_side
    seed: 3
    alpha: 0.05
    audits:
      - {id: inverted, mechanism: {zoo: laplace_inverted_scale, epsilon: 0.5}, expect: broken,
         pairs: witness, samples: [2000], repeat: 1}
      - {id: em_ok, mechanism: {registry: exponential, epsilon: 1.0}, expect: correct,
         pairs: [[[0, 1, 2], [1, 1, 2]]], samples: [2000], repeat: 1}
    """)


@pytest.mark.slow
def test_side_by_side_with_a_top_level_verifiers_package(wheels, tmp_path):
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    py = venv / "bin" / "python"
    # Dependencies (numpy, scipy, ...) come from this environment's site-packages through a .pth
    # line; a directory added that way is searched after the venv's own site-packages and its own
    # .pth files are not run, so this checkout's editable install stays invisible.
    site = Path(_run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip())
    (site / "_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    _pip("install", "--no-deps", "--no-index", str(wheels["verifiers"]), str(wheels["dpharness"]), target=py)

    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH",)}
    env["MPLBACKEND"] = "Agg"
    check = ("import verifiers, dpharness, dpharness.verifiers as v; "
             "assert verifiers.OWNER == 'other', verifiers.__file__; "
             "assert 'site-packages' in dpharness.__file__, dpharness.__file__; "
             "assert hasattr(v, 'audit'); print(dpharness.__version__)")
    _run([str(py), "-c", check], cwd=tmp_path, env=env)

    cfg = tmp_path / "audit.yaml"
    cfg.write_text(AUDIT)
    proc = subprocess.run([str(venv / "bin" / "dpharness"), "audit", str(cfg), "--out", str(tmp_path / "runs")],
                          capture_output=True, text=True, timeout=600, cwd=tmp_path, env=env)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "Traceback" not in out and "AttributeError" not in out
    assert any((tmp_path / "runs").rglob("results.csv"))

    # Uninstalling either distribution leaves the other one whole.
    _pip("uninstall", "-y", "verifiers", target=py)
    _run([str(py), "-c", "import dpharness.verifiers as v; assert hasattr(v, 'audit')"], cwd=tmp_path, env=env)
    _pip("install", "--no-deps", "--no-index", str(wheels["verifiers"]), target=py)
    _pip("uninstall", "-y", "dpharness", target=py)
    _run([str(py), "-c", "import verifiers; assert verifiers.OWNER == 'other'"], cwd=tmp_path, env=env)
