"""The ``dpharness`` command line (also ``python -m dpharness``): one parser, one dispatch.

Every module of this package (not starting with ``_``) is one command, found by scanning the
package -- there is no list to edit. A command module defines::

    NAME = "run"                      # the command word
    HELP = "..."                      # its line in `dpharness --help`
    DESCRIPTION = "..."               # optional: the text of `dpharness run --help`
    ORDER = 20                        # optional: its place in `dpharness --help` (default 100)
    PARENT = "regress"                # optional: a sub-command (`dpharness regress power ...`)
    def add_arguments(parser) -> None # its arguments and options (an argparse parser)
    def run(args) -> int              # do the work, print, return the exit code

``run`` may raise :class:`UsageError` for a mistake the parser could not see (two options that
do not go together): the command's usage is printed with the message, exit 2. ``args.prog`` is
the command's program name (``dpharness run``), for messages.

Command modules import only the standard library at module level and the rest inside ``run``:
every module is imported to build the parser, and ``dpharness list`` must stay fast. A module is
not named after a builtin (``dpharness list`` is ``listing.py``): importing a submodule binds its
name in this package's namespace.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
from types import ModuleType
from typing import Sequence

from dpharness import __version__

__all__ = ["UsageError", "build_parser", "commands", "main", "run_command"]

PROG = "dpharness"
DESCRIPTION = "Reproduce, regression-test and audit differentially private selection mechanisms."
#: What a command module must define (the rest is optional: see the module docstring).
REQUIRED = ("NAME", "HELP", "add_arguments", "run")


class UsageError(ValueError):
    """A usage mistake found by a command's ``run``: printed with the command's usage, exit 2."""


_MODULES: list[ModuleType] = []


def commands() -> list[ModuleType]:
    """The command modules of this package, in the order of ``dpharness --help`` (``ORDER``, then
    ``NAME``); TypeError naming a module that lacks a required name."""
    if not _MODULES:
        found = []
        for info in pkgutil.iter_modules(__path__):
            if info.name.startswith("_"):
                continue
            mod = importlib.import_module(f"{__name__}.{info.name}")
            missing = [n for n in REQUIRED if not hasattr(mod, n)]
            if missing:
                raise TypeError(f"command module {mod.__name__} lacks {', '.join(missing)} (see {__name__})")
            found.append(mod)
        _MODULES.extend(sorted(found, key=lambda m: (getattr(m, "ORDER", 100), m.NAME)))
    return _MODULES


def _top_level() -> list[ModuleType]:
    return [m for m in commands() if getattr(m, "PARENT", None) is None]


def _subcommands(name: str) -> dict[str, ModuleType]:
    return {m.NAME: m for m in commands() if getattr(m, "PARENT", None) == name}


def _command(name: str) -> ModuleType:
    return next(m for m in _top_level() if m.NAME == name)


def _setup(parser: argparse.ArgumentParser, module: ModuleType) -> argparse.ArgumentParser:
    module.add_arguments(parser)
    parser.set_defaults(prog=parser.prog)
    return parser


def _parser_kwargs(module: ModuleType) -> dict[str, str]:
    desc = getattr(module, "DESCRIPTION", None)
    return {"help": module.HELP, **({"description": desc} if desc is not None else {})}


def _build(prog: str) -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    """The top-level parser and each command's sub-parser, by command name."""
    p = argparse.ArgumentParser(prog=prog, description=DESCRIPTION)
    p.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    parsers = {m.NAME: _setup(sub.add_parser(m.NAME, **_parser_kwargs(m)), m) for m in _top_level()}
    return p, parsers


def build_parser(prog: str = PROG) -> argparse.ArgumentParser:
    """The parser of ``dpharness``: ``--version`` and one sub-parser per top-level command."""
    return _build(prog)[0]


def _command_parser(module: ModuleType, prog: str) -> argparse.ArgumentParser:
    """The parser of one command (or sub-command) alone, under the program name ``prog``."""
    kwargs = _parser_kwargs(module)
    return _setup(argparse.ArgumentParser(prog=prog, description=kwargs.get("description", kwargs["help"])), module)


def _parse(argv: list[str], prog: str) -> tuple[ModuleType, argparse.ArgumentParser, argparse.Namespace]:
    """``(command module, its parser, parsed arguments)`` of ``dpharness ARGV``; a sub-command
    (``regress power ...``) is parsed by its own parser."""
    names = {m.NAME for m in _top_level()}
    if len(argv) >= 2 and argv[0] in names and argv[1] in _subcommands(argv[0]):
        module = _subcommands(argv[0])[argv[1]]
        parser = _command_parser(module, f"{prog} {argv[0]} {argv[1]}")
        args = parser.parse_args(argv[2:])
        args.command = f"{argv[0]} {argv[1]}"
        return module, parser, args
    parser, parsers = _build(prog)
    args = parser.parse_args(argv)
    return _command(args.command), parsers[args.command], args


def _declare_inputs(args: argparse.Namespace) -> None:
    """Tell the output checks what this command reads, so that no ``--json``/``--junit`` path can
    overwrite it (:func:`bench.report.verdicts.set_inputs`): config files, run folders, baselines."""
    from dpharness.bench.report.verdicts import set_inputs

    files = [(c, "the config") for c in (getattr(args, "configs", None) or [])]
    if getattr(args, "config", None):
        files.append((args.config, "the config"))
    if getattr(args, "baseline", None):
        files.append((args.baseline, "the --baseline file"))
    folders = [(getattr(args, "resume", None), "the run folder being resumed"),
               (getattr(args, "new_run_dir", None), "the new run folder")]
    read_only = [(getattr(args, "baseline_run_dir", None), "the baseline run folder")]
    set_inputs(files=files, folders=folders, read_only=read_only)


def _dispatch(module: ModuleType, parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    _declare_inputs(args)
    try:
        return int(module.run(args) or 0)
    except UsageError as exc:
        parser.error(str(exc))  # exits 2 with the command's usage
    except KeyboardInterrupt:
        print("interrupted; finished tasks are saved, re-run the same command to resume", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # output piped into `head` and closed early: not an error of ours
        sys.stderr.close()
        return 0
    raise AssertionError("unreachable")  # pragma: no cover - parser.error exits


def main(argv: Sequence[str] | None = None) -> int:
    """``dpharness ARGV`` (default ``sys.argv[1:]``): parse, run the command, return its exit code."""
    module, parser, args = _parse(list(sys.argv[1:] if argv is None else argv), PROG)
    return _dispatch(module, parser, args)


def run_command(name: str, argv: Sequence[str] | None = None, prog: str | None = None) -> int:
    """``dpharness NAME ARGV`` under another program name (``python -m dpharness.bench.regress``
    is ``run_command("regress", prog="python -m dpharness.bench.regress")``)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    prog = prog or f"{PROG} {name}"
    module = _command(name)
    subs = _subcommands(name)
    if argv and argv[0] in subs:
        module, prog, argv = subs[argv[0]], f"{prog} {argv[0]}", argv[1:]
    parser = _command_parser(module, prog)
    args = parser.parse_args(argv)
    args.command = name
    return _dispatch(module, parser, args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
