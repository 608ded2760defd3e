"""Replaying an audit's witness from its files: the run folder's ``results.csv`` holds every witness
in full (``event_json``, ``d1_json``, ``d2_json``, ``witness_seed``, ``witness_key``,
``witness_chunked``, ``cert_samples``, ``direction``), and the config says how to build the mechanism.

:func:`witness` rebuilds the mechanism and the event and certifies the event again on the very draws
the run certified it on (:func:`verifiers.replay`), so the counts are the run's (for mechanisms
that draw from the generator they are given). The ``replay.python`` line of ``--json`` is a call
of it that runs as printed.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pandas as pd

__all__ = ["mechanism", "witness", "python_line"]


def mechanism(config: str | Path, audit_id: str, *, quick: bool = False) -> Any:
    """The mechanism audit ``audit_id`` of ``config`` audits, built as a run builds it."""
    from dpharness.bench.audits.build import build_mechanism
    from dpharness.bench.config import load_config

    spec = load_config(config, quick=quick).spec
    ids = [a.id for a in spec.audits]
    if audit_id not in ids:
        raise ValueError(f"{config} has no audit {audit_id!r}; its audits: {', '.join(ids)}")
    a = spec.audit(audit_id)
    mech, _, _ = build_mechanism(a.mechanism, a.import_paths)
    return mech


def _row(run_dir: Path, audit_id: str, samples: int | None, repeat: int | None) -> pd.Series:
    path = run_dir / "results.csv"
    if not path.is_file():
        raise ValueError(f"{run_dir} is not an audit run folder: no results.csv")
    rows = pd.read_csv(path, keep_default_na=False, dtype={"witness_key": str, "witness_seed": str})
    if "event_json" not in rows:
        raise ValueError(f"{path} was written before witnesses were kept in full (no event_json column): "
                         "re-run the audit to replay its witnesses from the files")
    rows = rows[(rows["audit"] == audit_id) & (rows.get("status", "ok") == "ok")]
    if samples is not None:
        rows = rows[rows["samples"].astype(int) == int(samples)]
    if repeat is not None:
        rows = rows[rows["repeat"].astype(int) == int(repeat)]
    rows = rows[rows["event_json"] != ""]
    if rows.empty:
        raise ValueError(f"{path}: no finished row of audit {audit_id!r} with a witness"
                         + (f" at samples {samples}" if samples is not None else "")
                         + (f", repeat {repeat}" if repeat is not None else ""))
    flagged = rows[rows["violated"].astype(str).str.lower() == "true"]
    return (flagged if len(flagged) else rows).iloc[0]


def witness(run_dir: str | Path, audit_id: str, *, samples: int | None = None, repeat: int | None = None,
            config: str | Path | None = None, alpha: float | None = None) -> Any:
    """The :class:`verifiers.Verdict` of the witness of ``audit_id`` in the run folder ``run_dir``
    certified again on the same draws (its ``witness.counts`` are the run's).

    The row is the first flagged repeat at ``samples`` (default: any), else the first repeat, as in
    ``--json``; ``config`` (default: the run folder's ``config.yaml``) builds the mechanism -- give
    the original file when a ``callable:`` is imported from its folder. ``alpha`` (default the
    row's) only changes the bound printed with the counts.
    """
    from dpharness import verifiers
    from dpharness.verifiers.verdict import data_from_json

    run_dir = Path(run_dir)
    r = _row(run_dir, audit_id, samples, repeat)
    if str(r.get("sequential_looks", "")).strip() not in ("", "nan"):
        raise ValueError(f"audit {audit_id!r} certified sequentially: its looks are replayed by re-running the "
                         "audit (the replay command of --json), not from the files")
    if r["d1_json"] == "" or r["d2_json"] == "":
        raise ValueError(f"audit {audit_id!r}: the pair's data could not be written as JSON; re-run the audit")
    mech = mechanism(config or run_dir / "config.yaml", audit_id)
    a = float(r["alpha"]) if alpha is None and str(r.get("alpha", "")) not in ("", "nan") else (alpha or 0.05)
    return verifiers.replay(mech, data_from_json(r["d1_json"]), data_from_json(r["d2_json"]),
                            event=verifiers.Event.from_json(r["event_json"]), direction=str(r["direction"]),
                            samples=int(float(r["cert_samples"])), seed=int(r["witness_seed"]),
                            key=tuple(int(k) for k in str(r["witness_key"]).split()),
                            chunked=str(r["witness_chunked"]).lower() == "true", alpha=a if math.isfinite(a) else 0.05)


def python_line(run_dir: str | Path, audit_id: str, samples: int, config: str | Path | None = None) -> str:
    """A Python line that replays the witness of ``audit_id`` at ``samples`` and prints its counts."""
    cfg = "" if config is None else f", config={str(config)!r}"
    return (f"from dpharness.bench.audits.replay import witness; "
            f"print(witness({str(run_dir)!r}, {audit_id!r}, samples={int(samples)}{cfg}).witness.counts)")
