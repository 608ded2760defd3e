"""The one command line (bench/cli/): command modules are discovered, parsed by one parser and
dispatched the same way; sub-commands, usage errors and the other entry points
(``python -m dpharness.bench.regress``, ``python -m dpharness.bench.perf``) go through it. The
commands' own behaviour is tested with their features (test_runner, test_regress, test_perf, ...)."""

from __future__ import annotations

import argparse
import subprocess
import sys
import types
from pathlib import Path

import pytest

from dpharness.bench import cli

ROOT = Path(__file__).resolve().parents[2]
BASELINE = ROOT / "results" / "baselines" / "regress_duff_integers"


def test_every_command_module_keeps_the_contract_and_the_help_order():
    mods = cli.commands()
    for m in mods:
        assert all(hasattr(m, n) for n in cli.REQUIRED), m.__name__
        assert callable(m.add_arguments) and callable(m.run)
    top = [m.NAME for m in mods if getattr(m, "PARENT", None) is None]
    assert top[:7] == ["list", "run", "validate", "plot", "audit", "regress", "bench"]  # as before the split
    assert "float-audit" in top and "sweep" in top
    assert [m.NAME for m in mods if getattr(m, "PARENT", None) == "regress"] == ["power"]
    choices = cli.build_parser()._subparsers._group_actions[0].choices
    assert list(choices) == top


def test_building_the_parser_imports_nothing_heavy():
    code = ("import sys; from dpharness.bench import cli; cli.build_parser(); "
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'numpy', 'pandas', 'scipy', 'matplotlib', "
            "'joblib', 'yaml', 'tqdm'}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"  # `dpharness list` stays fast


def _fake(name: str, **attrs: object) -> types.ModuleType:
    m = types.ModuleType(f"dpharness.bench.cli.{name}")
    m.__dict__.update(attrs)
    return m


def test_a_new_command_module_is_found_parsed_and_dispatched(monkeypatch, capsys):
    seen: list[argparse.Namespace] = []

    def add(p: argparse.ArgumentParser) -> None:
        p.add_argument("word")

    def run_hello(args: argparse.Namespace) -> int:
        seen.append(args)
        if args.word == "bad":
            raise cli.UsageError("bad is not a word")
        return 7

    hello = _fake("hello", NAME="hello", HELP="say hello", add_arguments=add, run=run_hello)
    loud = _fake("hello_loud", NAME="loud", PARENT="hello", HELP="louder", add_arguments=add,
                 run=lambda args: seen.append(args) or 3)
    monkeypatch.setattr(cli, "_MODULES", [*cli.commands(), hello, loud])
    assert cli.main(["hello", "world"]) == 7
    assert seen[-1].word == "world" and seen[-1].prog == "dpharness hello" and seen[-1].command == "hello"
    assert cli.main(["hello", "loud", "x"]) == 3  # a sub-command has its own parser
    assert seen[-1].prog == "dpharness hello loud" and seen[-1].command == "hello loud"
    with pytest.raises(SystemExit) as exc:
        cli.main(["hello", "bad"])
    assert exc.value.code == 2
    assert "usage: dpharness hello" in capsys.readouterr().err  # a UsageError prints the command's usage
    assert cli.run_command("hello", ["loud", "y"], prog="python -m hello") == 3
    assert seen[-1].prog == "python -m hello loud"


def test_a_module_without_the_contract_is_named(monkeypatch):
    real = cli.pkgutil.iter_modules
    monkeypatch.setattr(cli.pkgutil, "iter_modules",
                        lambda path: [*real(path), cli.pkgutil.ModuleInfo(None, "broken", False)])
    monkeypatch.setitem(sys.modules, "dpharness.bench.cli.broken", _fake("broken", NAME="broken"))
    monkeypatch.setattr(cli, "_MODULES", [])
    with pytest.raises(TypeError, match="dpharness.bench.cli.broken lacks HELP, add_arguments, run"):
        cli.commands()


@pytest.mark.slow
def test_regress_power_is_a_sub_command_and_python_m_still_works(capsys):
    args = [str(BASELINE), "--reps", "20"]
    assert cli.main(["regress", "power", *args]) == 0
    text = capsys.readouterr().out
    assert "detectable degradation" in text
    proc = subprocess.run([sys.executable, "-m", "dpharness.bench.regress", "power", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == text  # the same output from both entry points
    bad = subprocess.run([sys.executable, "-m", "dpharness.bench.regress", "power", str(BASELINE), "--power", "2"],
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert bad.returncode == 2
    assert bad.stderr.strip() == "python -m dpharness.bench.regress power: --power must be in (0, 1), got 2.0"


def test_float_audit_is_a_command(capsys, tmp_path):
    argv = ["float-audit", "exponential", "snapping", "--budget", "20000", "--out", str(tmp_path)]
    assert cli.main(argv) == 0
    out, err = capsys.readouterr()
    assert "| `exponential` | finite |" in out and "| `snapping` |" in out
    assert "budget 20000 calls per search, alpha 0.001, seed 0" in err
    # a run like any other: the table in the run folder; the same table (times aside) with two workers
    (run_dir,) = (tmp_path / "float_audit").iterdir()
    assert (run_dir / "float_audit.md").read_text().startswith(out.strip())
    assert cli.main([*argv, "--jobs", "2"]) == 0
    out2, err2 = capsys.readouterr()

    def verdicts(text):
        return [line.rsplit("|", 2)[0] for line in text.splitlines()]
    assert verdicts(out2) == verdicts(out) and "3 tasks computed, 0 reused" in err2
    with pytest.raises(SystemExit) as exc:
        cli.main(["float-audit", "no_such_mechanism"])
    assert exc.value.code == 2
    assert "unknown mechanism(s) no_such_mechanism; accepted:" in capsys.readouterr().err


def test_float_audit_config_validates_and_names_its_mistakes():
    from dpharness import mechanisms
    from dpharness.bench.config import ConfigError, load_config

    cfg = load_config(ROOT / "configs" / "float_audit.yaml")
    assert cfg.spec.budget == 2_000_000 and cfg.spec.names == tuple(mechanisms.available())
    with pytest.raises(ConfigError) as exc:
        load_config({"name": "fa", "experiment": "float_audit", "mechanisms": ["snapping", "snaping"], "alpha": 2,
                     "budgett": 5})
    text = str(exc.value)
    assert "mechanisms: unknown mechanism(s) snaping; accepted:" in text
    assert "alpha: must be in (0, 1)" in text and "budgett: unknown key (did you mean 'budget'?)" in text
