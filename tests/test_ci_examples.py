"""The CI examples of docs/ci.md run: their commands are extracted from between the
``<!-- ci-example: NAME -->`` markers and executed in a temporary folder (minus the CI service's
own steps: checkout, Python set-up, ``pip install``, uploads). The quick tier checks that both
examples run the same commands and that every ``dpharness`` command parses; the slow tier runs them.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml
from dpharness.bench import schemas
from dpharness.bench.cli import build_parser

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "ci.md"


def _example(name: str) -> dict:
    text = DOC.read_text(encoding="utf-8")
    m = re.search(rf"<!-- ci-example: {name} -->\s*```yaml\n(.*?)```\s*<!-- /ci-example -->", text, re.S)
    assert m, f"docs/ci.md has no ci-example: {name} block"
    return yaml.safe_load(m.group(1))


def _is_service(line: str) -> bool:
    return line.startswith(("pip ", "python -m pip "))


def github_commands() -> list[str]:
    wf = _example("github")
    (job,) = wf["jobs"].values()
    lines = []
    for step in job["steps"]:
        if "run" in step:
            lines += [ln.strip() for ln in step["run"].splitlines() if ln.strip()]
    return [ln for ln in lines if not _is_service(ln)]


def gitlab_commands() -> list[str]:
    (job,) = _example("gitlab").values()
    return [ln for ln in job["script"] if not _is_service(ln)]


def test_both_examples_run_the_same_commands_and_upload_junit():
    gh, gl = github_commands(), gitlab_commands()
    assert gh == gl and gh
    assert any(" audit " in f" {c} " and "--junit" in c for c in gh)
    assert any(" regress " in f" {c} " and "--junit" in c for c in gh)
    (job,) = _example("gitlab").values()
    assert job["artifacts"]["reports"]["junit"]
    (gjob,) = _example("github")["jobs"].values()
    assert any("upload-artifact" in s.get("uses", "") for s in gjob["steps"])


def test_every_documented_dpharness_command_parses():
    parser = build_parser()
    for cmd in github_commands():
        argv = shlex.split(cmd)
        if argv[0] != "dpharness":
            continue
        args = parser.parse_args(argv[1:])
        for path in (getattr(args, "config", None), *(getattr(args, "configs", None) or [])):
            if path:
                assert (ROOT / path).is_file(), path
        if args.command == "regress":
            assert (ROOT / args.baseline_run_dir / "manifest.json").is_file()


def test_the_project_workflow_runs_the_readme_test_command():
    wf = yaml.safe_load((ROOT / ".github" / "workflows" / "ci.yml").read_text())
    runs = " ".join(s.get("run", "") for job in wf["jobs"].values() for s in job["steps"])
    assert "pip install -e '.[test,dask,peers]' && pytest" in runs
    assert "pip install -e '.[test,dask,peers]' && pytest" in (ROOT / "README.md").read_text()


@pytest.mark.slow
def test_the_documented_commands_run(tmp_path):
    # the checkout's configs and committed baselines, read only; everything else is written here
    (tmp_path / "configs").symlink_to(ROOT / "configs")
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "baselines").symlink_to(ROOT / "results" / "baselines")
    env = {**os.environ, "MPLBACKEND": "Agg", "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    for cmd in github_commands():
        proc = subprocess.run(["bash", "-euo", "pipefail", "-c", cmd], cwd=tmp_path, env=env, capture_output=True,
                              text=True, timeout=900)
        assert proc.returncode == 0, f"{cmd}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    for name in ("validate", "audit", "regress"):
        doc = json.loads((tmp_path / "reports" / f"{name}.json").read_text())
        assert schemas.validate(doc, schemas.load_schema(name)) == [] and doc["verdict"]["passed"]
    for name in ("audit", "regress"):
        root = ET.parse(tmp_path / "reports" / f"{name}-junit.xml").getroot()
        suite = root.find("testsuite")
        assert int(suite.get("tests")) > 0 and suite.get("failures") == "0"
