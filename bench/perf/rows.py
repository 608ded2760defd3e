"""The JSON rows of a benchmark run and the :class:`Report` every section fills.

Row fields (:data:`ROW_FIELDS`): ``n`` is the input size (records for medians, candidates k for
finite mechanisms, samples per side for the verifier, tasks for Table 1); ``size`` is the number
of releases one timed call produces. A dpharness row is repeated once per (floor, peer) pair so
that each row carries exactly one floor and one peer; its ratios are medians of per-repetition
ratios (:func:`.timing.pair_ratios`), and the per-repetition ratios themselves are kept
(``ratio_to_floor_samples``, ``ratio_to_peer_samples``: the samples of the performance gate,
:mod:`.gate`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from dpharness.bench.perf.timing import Impl, pair_ratios, stats

__all__ = ["LEGACY_SCHEMA", "N_LABEL", "ROW_FIELDS", "SCHEMA", "Report", "floor_row", "rows_for"]

SCHEMA = "dpharness.bench/1"
#: the name of the same document before it carried a verdict and per-repetition ratios
LEGACY_SCHEMA = "dpharness-bench/1"
ROW_FIELDS = (
    "name", "kind", "section", "n", "size", "seconds", "seconds_min", "seconds_max", "repeats",
    "floor", "floor_seconds", "floor_seconds_min", "floor_seconds_max",
    "ratio_to_floor", "ratio_to_floor_min", "ratio_to_floor_max",
    "peer", "peer_size", "peer_seconds", "peer_seconds_min", "peer_seconds_max", "peer_repeats",
    "ratio_to_peer", "ratio_to_peer_min", "ratio_to_peer_max",
    "measured_size", "extrapolated", "calls_per_timing", "note",
    "ratio_to_floor_samples", "ratio_to_peer_samples",
)
#: what ``n`` counts in each section (table headers and result lines)
N_LABEL = {"median": "n", "finite": "k", "table1": "tasks", "verifier": "samples/side", "draws": "draws/dataset"}


def _nothing(_: str) -> None:
    return None


@dataclass
class Report:
    """What the sections produce: rows, skips (``{section, name, reason}``) and notes.

    Sections never print. ``on_result`` receives one line per measured (section, n) as soon as
    it is known (the CLI prints it); ``on_step`` is called once per finished (section, n) step
    (the progress display). Both default to doing nothing.
    """

    rows: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[dict[str, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    on_result: Callable[[str], None] = _nothing
    on_step: Callable[[str], None] = _nothing

    def skip(self, section: str, name: str, reason: str) -> None:
        """Record that ``name`` was not measured and why (each distinct skip once)."""
        entry = {"section": section, "name": name, "reason": reason}
        if entry not in self.skipped:
            self.skipped.append(entry)

    def measured(self, section: str, n: int, floors: list[Impl], impls: list[Impl]) -> None:
        """One result line for a finished step (median seconds of each implementation)."""
        parts = []
        for x in floors + impls:
            s = stats(list(x.times.values()))[0]
            if s is not None:
                parts.append(f"{x.name} {s:.3g}s")
        self.on_result(f"  {section} {N_LABEL.get(section, 'n')}={n:g}: " + ", ".join(parts))

    def step(self, desc: str) -> None:
        self.on_step(desc)


def _blank() -> dict[str, Any]:
    return {k: None for k in ROW_FIELDS}


def rows_for(
    section: str, n: int, impl: Impl, floors: list[Impl], peers: list[Impl], note: str = ""
) -> list[dict[str, Any]]:
    """One row per (floor, peer) pair; ratios are medians of per-repetition ratios."""
    sec, smin, smax = stats(list(impl.times.values()))
    out = []
    floor_opts: list[Impl | None] = [f for f in floors if f.name != impl.name] or [None]
    peer_opts: list[Impl | None] = (peers if impl.kind == "dpharness" else []) or [None]
    for fl in floor_opts:
        for pe in peer_opts:
            row = _blank()
            row.update(name=impl.name, kind=impl.kind, section=section, n=n, size=impl.size, seconds=sec,
                       seconds_min=smin, seconds_max=smax, repeats=len(impl.times),
                       measured_size=impl.measured_size or impl.size, calls_per_timing=impl.inner,
                       extrapolated=bool(impl.measured_size and impl.measured_size < impl.size),
                       note="; ".join(x for x in (impl.note, note) if x))
            if fl is not None:
                ft = impl.floor_times.get(fl.name, {})
                fs, fmin, fmax = stats(list(ft.values()))
                ratios = pair_ratios(impl.times, ft)
                rs, rmin, rmax = stats(ratios)
                row.update(floor=fl.name, floor_seconds=fs, floor_seconds_min=fmin,
                           floor_seconds_max=fmax, ratio_to_floor=rs, ratio_to_floor_min=rmin,
                           ratio_to_floor_max=rmax, ratio_to_floor_samples=ratios)
            if pe is not None:
                ps, pmin, pmax = stats(list(pe.times.values()))
                ratios = pair_ratios(impl.times, pe.times)
                rs, rmin, rmax = stats(ratios)
                row.update(peer=pe.name, peer_size=pe.size, peer_seconds=ps, peer_seconds_min=pmin,
                           peer_seconds_max=pmax, peer_repeats=len(pe.times), ratio_to_peer=rs,
                           ratio_to_peer_min=rmin, ratio_to_peer_max=rmax, ratio_to_peer_samples=ratios)
            out.append(row)
    return out


def floor_row(section: str, n: int, fl: Impl) -> dict[str, Any]:
    """The row of a floor itself (its own times; no ratio unless the caller adds one)."""
    row = _blank()
    s, smin, smax = stats(list(fl.times.values()))
    row.update(name=fl.name, kind="floor", section=section, n=n, size=fl.size, seconds=s, seconds_min=smin,
               seconds_max=smax, repeats=len(fl.times), measured_size=fl.measured_size or fl.size,
               calls_per_timing=fl.inner,
               extrapolated=bool(fl.measured_size and fl.measured_size < fl.size),
               note="floor" + (f"; {fl.note}" if fl.note else ""))
    return row
