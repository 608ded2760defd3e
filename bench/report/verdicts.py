"""Machine-readable verdicts: ``--json PATH`` and ``--junit PATH`` files for CI.

Shared by ``dpharness audit``, ``regress``, ``validate`` and ``bench``:

* :func:`check_output_file` -- an output path is checked *before any work* (a file path, not a
  folder; in an existing, writable folder), so a typo costs nothing; the CLI exits 2 with the
  message, which names the flag.
* :func:`write_json` -- the document, checked against its packaged JSON Schema
  (:mod:`bench.schemas`), written atomically (:func:`bench.run.folders.atomic_write_text`).
* :func:`write_junit` -- JUnit XML (one ``<testsuite>``, one ``<testcase>`` per audit row / per
  regress cell; a failure carries its message and the full detail), written atomically.
* :func:`verdict_block` / :func:`run_manifest` -- the ``verdict`` and ``manifest`` blocks every
  schema shares.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import os
import tempfile
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dpharness.bench.run.folders import atomic_write_text

__all__ = ["OutputPathError", "JUnitCase", "check_output_file", "jsonable", "run_manifest", "verdict_block",
           "write_json", "write_junit", "junit_xml"]


class OutputPathError(ValueError):
    """An output path that cannot be written; the message names the flag and what is accepted."""


#: What the current command reads (set by :func:`bench.cli.main` from its arguments): input files,
#: folders whose existing files it reads, and folders it must not write into at all (baselines).
#: :func:`check_output_file` refuses any output flag that would overwrite one of them.
INPUTS: dict[str, list[tuple[Path, str]]] = {"files": [], "folders": [], "read_only": []}


def set_inputs(files: list[tuple[Any, str]] = (), folders: list[tuple[Any, str]] = (),  # type: ignore[assignment]
               read_only: list[tuple[Any, str]] = ()) -> None:  # type: ignore[assignment]
    """Declare what the running command reads, each with the role named in messages (e.g. "the
    config", "the baseline run folder"); replaces the previous declaration."""
    def norm(items: Any) -> list[tuple[Path, str]]:
        out = []
        for p, role in items:
            if p is None:
                continue
            try:
                out.append((Path(p).resolve(), role))
            except (OSError, RuntimeError):
                continue
        return out

    INPUTS.update(files=norm(files), folders=norm(folders), read_only=norm(read_only))


def _guard_inputs(p: Path, flag: str) -> None:
    """Refuse an output path that is a file the command reads, an existing file inside a folder it
    reads, or any path inside a read-only folder (a committed baseline)."""
    try:
        rp = p.resolve()
    except (OSError, RuntimeError):
        return
    for f, role in INPUTS["files"]:
        if rp == f:
            raise OutputPathError(f"{flag}: {p} is {role}, which this command reads; writing there would destroy "
                                  "it -- give another path")
    for d, role in INPUTS["read_only"]:
        if rp == d or d in rp.parents:
            raise OutputPathError(f"{flag}: {p} is inside {role} ({d}), which this command only reads; "
                                  "give a path outside it")
    for d, role in INPUTS["folders"]:
        if (rp == d or d in rp.parents) and rp.exists():
            raise OutputPathError(f"{flag}: {p} is a file of {role} ({d}), which this command reads; "
                                  "give a new path")


def check_output_file(path: Any, flag: str, example: str) -> Path:
    """``path`` as a :class:`Path` if a file can be written there, else :class:`OutputPathError`.

    Accepted: a file path (existing regular file or new name) in an existing folder this process
    can create files in (tested by creating and removing a probe file), that is not a file the
    command reads (:data:`INPUTS`). ``example`` is a valid path shown in the messages.
    """
    if path is None or not str(path).strip():
        raise OutputPathError(f"{flag}: empty path; give a file path such as {example}")
    p = Path(path)
    try:
        return _check_output_file(p, flag, example)
    except OSError as exc:  # e.g. a name longer than the file system allows: the OS says why
        raise OutputPathError(f"{flag}: cannot use {str(p)[:80]}{'...' if len(str(p)) > 80 else ''}: "
                              f"{exc.strerror or exc}") from None


def _is_a_verdict_file(p: Path) -> bool:
    """Whether the existing file ``p`` may be replaced: empty, or an earlier verdict (a dpharness
    JSON document, or JUnit XML). Anything else -- the user's code, data, a config -- is never
    overwritten by an output flag."""
    try:
        with p.open("rb") as f:
            head = f.read(4096).decode("utf-8", errors="replace").lstrip("\ufeff \t\r\n")
    except OSError:
        return False
    if not head:
        return True
    if head.startswith("{"):
        return '"schema": "dpharness.' in head or '"schema":"dpharness.' in head
    return head.startswith("<") and ("<testsuites" in head or "<testsuite" in head)


def _check_output_file(p: Path, flag: str, example: str) -> Path:
    _guard_inputs(p, flag)
    if p.is_dir():
        raise OutputPathError(f"{flag}: {p} is a folder; give a file path such as {p / Path(example).name}")
    if p.exists() and not p.is_file():
        raise OutputPathError(f"{flag}: {p} exists and is not a regular file; give a file path such as {example}")
    parent = p.parent
    if not parent.exists():
        raise OutputPathError(f"{flag}: the folder {parent} does not exist; create it first or choose another path")
    if not parent.is_dir():
        raise OutputPathError(f"{flag}: {parent} is not a folder; give a file path such as {example}")
    if p.exists() and not os.access(p, os.W_OK):
        raise OutputPathError(f"{flag}: {p} is not writable")
    if p.is_file() and not _is_a_verdict_file(p):
        raise OutputPathError(f"{flag}: {p} exists and is not a verdict file written by dpharness (it would be "
                              f"overwritten); remove it or give a new path such as {example}")
    try:
        fd, name = tempfile.mkstemp(dir=parent, prefix=f".{p.name}.", suffix=".probe")
        os.close(fd)
        os.unlink(name)
    except OSError as exc:
        raise OutputPathError(f"{flag}: cannot write in the folder {parent}: {exc.strerror or exc}") from None
    return p


def check_distinct(paths: Mapping[str, Path | None]) -> None:
    """Two output flags naming the same file would overwrite each other: refused."""
    seen: dict[Path, str] = {}
    for flag, p in paths.items():
        if p is None:
            continue
        key = p.resolve()
        if key in seen:
            raise OutputPathError(f"{flag}: {p} is also the {seen[key]} file; give two different paths")
        seen[key] = flag


def jsonable(x: Any) -> Any:
    """Plain JSON values: numpy/pandas scalars to Python, NaN/inf to null (JSON has neither)."""
    if isinstance(x, Mapping):
        return {str(k): jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [jsonable(v) for v in x]
    if hasattr(x, "tolist") and not isinstance(x, (str, bytes)):  # numpy arrays and scalars
        return jsonable(x.tolist())
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    if x is None or isinstance(x, (bool, int, str)):
        return x
    if isinstance(x, Path):
        return str(x)
    try:
        import pandas as pd

        if pd.isna(x):
            return None
    except (TypeError, ValueError, ImportError):
        pass
    return str(x)


def utc_now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def run_manifest(extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The invocation's manifest: versions, git commit, platform, command (:mod:`bench.report.provenance`),
    time (and ``extra``)."""
    from dpharness.bench.report.provenance import provenance

    return jsonable({**provenance(), "created_utc": utc_now(), **(extra or {})})


def verdict_block(exit_code: int, message: str, **counts: Any) -> dict[str, Any]:
    """``{"passed", "exit_code", "message", ...counts}``; ``passed`` is ``exit_code == 0``."""
    return jsonable({"passed": exit_code == 0, "exit_code": int(exit_code), "message": message, **counts})


def write_json(path: Path, doc: dict[str, Any], command: str) -> None:
    """Check ``doc`` against ``command``'s schema, then write it atomically (indented, newline)."""
    from dpharness.bench import schemas

    doc = jsonable(doc)
    schemas.check(doc, command)
    atomic_write_text(Path(path), json.dumps(doc, indent=1, allow_nan=False) + "\n")


@dataclass
class JUnitCase:
    """One test case: ``failure`` (short message) makes it fail; ``detail`` is the body text."""

    name: str
    classname: str
    time: float = 0.0
    failure: str | None = None
    detail: str = ""
    error: str | None = None
    skipped: str | None = None
    properties: dict[str, Any] = field(default_factory=dict)


def _clean(text: Any) -> str:
    """XML 1.0 cannot hold most control characters: drop them."""
    return "".join(ch for ch in str(text) if ch in "\t\n\r" or ord(ch) >= 0x20)


def junit_xml(suite: str, cases: Iterable[JUnitCase], properties: Mapping[str, Any] | None = None) -> str:
    """JUnit XML text: ``<testsuites>`` holding one ``<testsuite name=suite>``."""
    cases = list(cases)
    root = ET.Element("testsuites")
    failures = sum(c.failure is not None for c in cases)
    errors = sum(c.error is not None for c in cases)
    skipped = sum(c.skipped is not None for c in cases)
    total_time = sum(c.time for c in cases)
    attrs = {"name": suite, "tests": str(len(cases)), "failures": str(failures), "errors": str(errors),
             "skipped": str(skipped), "time": f"{total_time:.3f}", "timestamp": utc_now()}
    root.attrib.update({k: attrs[k] for k in ("name", "tests", "failures", "errors", "time")})
    ts = ET.SubElement(root, "testsuite", attrs)
    if properties:
        props = ET.SubElement(ts, "properties")
        for k, v in properties.items():
            ET.SubElement(props, "property", {"name": str(k), "value": _clean(v)})
    for c in cases:
        tc = ET.SubElement(ts, "testcase", {"name": _clean(c.name), "classname": _clean(c.classname),
                                            "time": f"{c.time:.3f}"})
        if c.properties:
            props = ET.SubElement(tc, "properties")
            for k, v in c.properties.items():
                ET.SubElement(props, "property", {"name": str(k), "value": _clean(v)})
        if c.failure is not None:
            f = ET.SubElement(tc, "failure", {"message": _clean(c.failure), "type": "failure"})
            f.text = _clean(c.detail or c.failure)
        elif c.error is not None:
            e = ET.SubElement(tc, "error", {"message": _clean(c.error), "type": "error"})
            e.text = _clean(c.detail or c.error)
        elif c.skipped is not None:
            ET.SubElement(tc, "skipped", {"message": _clean(c.skipped)})
        if c.detail and c.failure is None and c.error is None:
            out = ET.SubElement(tc, "system-out")
            out.text = _clean(c.detail)
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def write_junit(path: Path, suite: str, cases: Iterable[JUnitCase],
                properties: Mapping[str, Any] | None = None) -> None:
    """Write :func:`junit_xml` atomically."""
    atomic_write_text(Path(path), junit_xml(suite, cases, properties))
