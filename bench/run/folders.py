"""Run folders: layout, atomic writes, task records, the run lock, config.yaml, table.csv / table.md.

A run folder ``<out>/<config name>/<UTC timestamp>_<config hash>/`` holds::

    config.yaml     the resolved config that was run (quick overrides and --seed applied)
    tasks/          finished task records, one JSON file per chunk of tasks
                    (``chunk-<hash>.json``, ``{"records": [...]}``), written atomically by the
                    worker that ran the chunk; resume reads these (and the older one-file-per-task
                    layout ``<key hash>.json``)
    results.csv     one tidy row per task (cells, p_<param> columns, seeds, metrics, seconds)
    table.csv       the summary table; table.md the same as Markdown
    manifest.json   versions, git commit, command line, wall time, parallelism, status
    figures/*.png
    .lock           present while a run writes to the folder (see :class:`RunLock`)

A folder without ``manifest.json`` (killed), or whose manifest status is not ``complete``
(``errors``: some tasks failed; ``interrupted``; ``failed``: an exception or a failing
summary/figure step), is *unfinished*: re-running the same command resumes the newest unfinished
folder with the same config hash and computes only the tasks that have no ``ok`` record.

Writes. Every file is written to a temporary ``.<name>.<pid>-<random>.tmp`` in the same folder and
renamed over the target (``os.replace``), so a reader sees the old file or the whole new one. The
temporary file is created with mode ``0o666`` filtered by the process umask, like any ``open()``
(umask 022 gives 0644). An interrupted write removes its temporary file; one left by ``kill -9``
is removed by the next run that takes the folder's lock (:func:`clean_stale_tmp`).

Locking. A run holds an exclusive ``flock`` on ``<run folder>/.lock`` while it writes; the file
names the holder (pid, host, start time). A second run into the same folder is refused at once with
that information (it does not wait). The kernel drops the lock when the holder exits, even on
``kill -9``, so a stale ``.lock`` file never blocks a resume. ``flock`` is local to one machine: two
hosts sharing a folder over NFS are not excluded from each other.
"""

from __future__ import annotations

import datetime as _dt
import errno
import json
import os
import secrets
import socket
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

if TYPE_CHECKING:  # only annotations here: checking a config loads no pandas
    import pandas as pd

from dpharness.bench.report.provenance import command_line
from dpharness.bench.report.tables import to_markdown
from dpharness.bench.run.tasks import stable_hash

__all__ = [
    "atomic_write_text",
    "write_run_config",
    "load_run_config",
    "new_run_dir",
    "find_unfinished",
    "is_finished",
    "clean_stale_tmp",
    "RunLock",
    "RunFolderBusy",
    "TaskStore",
    "write_table",
    "utc_stamp",
    "TMP_SUFFIX",
    "LOCK_NAME",
]

TMP_SUFFIX = ".tmp"
LOCK_NAME = ".lock"


def _tmp_name(path: Path) -> Path:
    return path.with_name(f".{path.name}.{os.getpid()}-{secrets.token_hex(4)}{TMP_SUFFIX}")


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically: a temporary file in the same folder, then os.replace.

    A reader (or a resumed run after kill -9) sees either the old file or the complete new one.
    The file gets mode ``0o666 & ~umask`` (what ``open(path, "w")`` would give), not the 0600 of
    :func:`tempfile.mkstemp`. On any exception, KeyboardInterrupt included, the temporary file is
    removed.
    """
    path = Path(path)
    tmp = _tmp_name(path)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)  # the kernel applies the umask
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:  # broad on purpose: no temporary file is left behind, then re-raise
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def clean_stale_tmp(run_dir: Path) -> int:
    """Remove temporary files (``.*.tmp``) left anywhere in a run folder by a killed run.

    Call only while holding the folder's :class:`RunLock` (no other writer then). Returns how many
    were removed.
    """
    n = 0
    for p in Path(run_dir).rglob(f".*{TMP_SUFFIX}"):
        try:
            p.unlink()
            n += 1
        except (FileNotFoundError, IsADirectoryError, PermissionError):
            pass
    return n


def utc_stamp(now: _dt.datetime | None = None) -> str:
    now = now or _dt.datetime.now(_dt.timezone.utc)
    return now.strftime("%Y%m%dT%H%M%SZ")


def new_run_dir(parent: Path, name: str, config_hash: str) -> Path:
    """Create ``parent/name/<UTC stamp>_<hash>`` (never an existing folder: suffix -2, -3...)."""
    base = Path(parent) / name
    base.mkdir(parents=True, exist_ok=True)
    stamp = utc_stamp()
    for i in range(1, 1000):
        d = base / (f"{stamp}_{config_hash}" if i == 1 else f"{stamp}_{config_hash}-{i}")
        try:
            d.mkdir()
        except FileExistsError:
            continue
        (d / "tasks").mkdir()
        return d
    raise RuntimeError(f"cannot create a new run folder under {base}")


def read_manifest(run_dir: Path) -> dict | None:
    """The folder's manifest.json as a dict, or None when absent or unreadable."""
    m = Path(run_dir) / "manifest.json"
    try:
        data = json.loads(m.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def is_finished(run_dir: Path) -> bool:
    """True when the folder's manifest says ``"status": "complete"`` (never resumed again)."""
    man = read_manifest(run_dir)
    return man is not None and man.get("status") == "complete"


def find_unfinished(parent: Path, name: str, config_hash: str) -> Path | None:
    """Newest folder ``parent/name/*_<hash>[-k]`` that is not finished, or None."""
    base = Path(parent) / name
    if not base.is_dir():
        return None
    cands = [d for d in base.iterdir() if d.is_dir() and d.name.split("_", 1)[-1].split("-")[0] == config_hash
             and (d / "config.yaml").is_file()]
    for d in sorted(cands, key=lambda p: p.name, reverse=True):
        if not is_finished(d):
            return d
    return None


# -- the run lock --------------------------------------------------------------------------------


class RunFolderBusy(RuntimeError):
    """Another live run holds the folder's lock; the message names it (pid, host, start)."""


class RunLock:
    """Exclusive lock of a run folder for one writing run (``fcntl.flock`` on ``.lock``).

    ``acquire()`` never waits: it raises :class:`RunFolderBusy` naming the holder. The lock file
    holds ``{"pid", "host", "started_utc", "command"}`` of the holder; it is removed on
    ``release()``. A holder that died (even by kill -9) holds nothing: the kernel released its
    ``flock``, so the next run takes the lock and overwrites the stale file. The descriptor is not
    inherited by worker processes (Python opens it close-on-exec).
    """

    def __init__(self, run_dir: Path):
        self.run_dir = Path(run_dir)
        self.path = self.run_dir / LOCK_NAME
        self._fd: int | None = None

    def acquire(self) -> "RunLock":
        import fcntl

        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise
            raise RunFolderBusy(self._busy_message()) from None
        info = {"pid": os.getpid(), "host": socket.gethostname(),
                "started_utc": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
                "command": command_line()}
        os.ftruncate(fd, 0)
        os.pwrite(fd, (json.dumps(info) + "\n").encode("utf-8"), 0)
        self._fd = fd
        return self

    def _busy_message(self) -> str:
        try:
            info = json.loads(self.path.read_text(encoding="utf-8") or "{}")
        except (OSError, ValueError):
            info = {}
        who = (f"pid {info.get('pid', '?')} on host {info.get('host', '?')}, started {info.get('started_utc', '?')}"
               if info else "another process")
        return (f"run folder {self.run_dir} is being written by another run ({who}); a folder is written by "
                "one run at a time: wait for that run to finish (or stop it), or pass a different --out")

    def release(self) -> None:
        if self._fd is None:
            return
        try:
            # Unlink while still holding the lock, so no one can lock the old file after us.
            self.path.unlink()
        except OSError:
            pass
        os.close(self._fd)  # closing drops the flock
        self._fd = None

    def __enter__(self) -> "RunLock":
        return self.acquire() if self._fd is None else self

    def __exit__(self, *exc: Any) -> None:
        self.release()


# -- task records -------------------------------------------------------------------------------


class TaskStore:
    """Finished-task records in ``run_dir/tasks``.

    Current layout: one file per chunk of tasks, ``chunk-<hash of its keys>.json`` holding
    ``{"records": [...]}`` (one atomic write per chunk). The earlier layout, one
    ``<key hash>.json`` per task, is still read, so a run folder begun by an older version resumes.
    """

    def __init__(self, run_dir: Path, create: bool = True):
        self.dir = Path(run_dir) / "tasks"
        if create:
            self.dir.mkdir(parents=True, exist_ok=True)

    @classmethod
    def at(cls, tasks_dir: str | Path) -> "TaskStore":
        """The store whose record folder is ``tasks_dir`` (used in workers; no mkdir)."""
        self = cls.__new__(cls)
        self.dir = Path(tasks_dir)
        return self

    def path(self, key: str) -> Path:
        """Per-task record file of the earlier layout."""
        return self.dir / f"{stable_hash(key):016x}.json"

    def chunk_path(self, keys: Iterable[str]) -> Path:
        """File of a chunk: named by the hash of its keys, so two different chunks never share a
        name (rewriting the same set of keys replaces records of exactly those tasks)."""
        h = stable_hash("\n".join(keys))
        return self.dir / f"chunk-{h:016x}.json"

    def save(self, record: dict) -> None:
        """Save one record (a chunk of one)."""
        self.save_chunk([record])

    def save_chunk(self, records: list[dict]) -> Path:
        path = self.chunk_path(r["key"] for r in records)
        atomic_write_text(path, json.dumps({"records": records}, allow_nan=True, separators=(",", ":")))
        return path

    def load_all(self) -> dict[str, dict]:
        """Records by task key; an ``ok`` record wins over an error record of the same task.

        Corrupt or partial files are ignored (their tasks are recomputed).
        """
        out: dict[str, dict] = {}
        if not self.dir.is_dir():
            return out
        for p in sorted(self.dir.glob("*.json")):
            try:
                data = json.loads(p.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            if p.name.startswith("chunk-"):
                recs = data.get("records") if isinstance(data, dict) else None
                if not isinstance(recs, list):
                    continue
            elif isinstance(data, dict) and "key" in data and p.name == self.path(str(data["key"])).name:
                recs = [data]
            else:
                continue
            for rec in recs:
                if not (isinstance(rec, dict) and isinstance(rec.get("key"), str)):
                    continue
                old = out.get(rec["key"])
                if old is None or (old.get("status") != "ok" and rec.get("status") == "ok"):
                    out[rec["key"]] = rec
        return out


def write_run_config(run_dir: Path, cfg: Any) -> None:
    """The resolved config as ``config.yaml``; a header records where relative data paths live."""
    import yaml

    header = (f"# resolved config of this run (from {cfg.source}{', --quick' if cfg.quick else ''}); hash {cfg.hash}\n"
              f"# base_dir: {cfg.base_dir or ''}\n")
    atomic_write_text(Path(run_dir) / "config.yaml", header + yaml.safe_dump(cfg.raw, sort_keys=False, allow_unicode=True))


def load_run_config(run_dir: Path) -> Any:
    """Load a run folder's ``config.yaml`` with the original ``base_dir`` (relative CSV paths)."""
    from dpharness.bench.config import load_config

    path = Path(run_dir) / "config.yaml"
    base = None
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if not line.startswith("#"):
                break
            if line.startswith("# base_dir:"):
                base = line.split(":", 1)[1].strip() or None
    return load_config(path, base_dir=base)


def write_table(run_dir: Path, table: pd.DataFrame, heading: str = "") -> None:
    """table.csv (full precision) and table.md (2 decimals) in the run folder."""
    atomic_write_text(Path(run_dir) / "table.csv", table.to_csv(index=False))
    md = (f"{heading}\n\n" if heading else "") + to_markdown(table)
    atomic_write_text(Path(run_dir) / "table.md", md)
