"""The one provenance writer (bench/report/provenance.py): a run folder's manifest.json, the
``manifest`` block of the ``--json`` verdicts and the ``environment`` of ``dpharness bench`` record
the same versions, git state and command line."""

from __future__ import annotations

import json
import sys

from dpharness.bench.perf.environment import PACKAGES, environment
from dpharness.bench.report import provenance
from dpharness.bench.report.verdicts import run_manifest
from dpharness.bench.run.runner import run

SMALL = {"name": "prov", "seed": 7, "data": {"generator": "normal", "n": 51}, "lower": -10, "upper": 10,
         "epsilon": [1.0], "datasets": 1, "draws": 5,
         "mechanisms": [{"label": "lap", "name": "smooth_sensitivity_median", "noise": "laplace", "delta": 0.001}]}


def test_every_manifest_records_the_same_provenance(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "argv", ["/usr/bin/dpharness", "run", "x.yaml"])
    prov = provenance.provenance()
    assert set(prov) == {"versions", "git", "platform", "cpu_count", "command"}
    assert prov["command"] == "dpharness run x.yaml" and prov["versions"]["python"]
    assert set(prov["versions"]) == {"python", *provenance.PACKAGES}

    verdict = run_manifest({"wall_seconds": 1.0})
    assert {k: verdict[k] for k in prov} == prov and verdict["wall_seconds"] == 1.0 and verdict["created_utc"]

    res = run(SMALL, out=tmp_path, progress=False, figures=False)
    man = json.loads((res.run_dir / "manifest.json").read_text())
    assert {k: man[k] for k in prov} == prov

    env = environment()
    assert env["versions"] == {p: prov["versions"][p] for p in PACKAGES}
    assert (env["git_commit"], env["git_dirty"]) == (prov["git"]["commit"], prov["git"]["dirty"])


def test_command_line_without_argv(monkeypatch):
    monkeypatch.setattr(sys, "argv", [])
    assert provenance.command_line() == "" and provenance.command_line(empty=None) is None
