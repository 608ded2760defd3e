"""Free processors for the run's workers (bench.run.cpu_share) and the runner's decision to start them
(bench.run.runner._spread_estimate): exact arithmetic on scripted readings, no timing."""

from __future__ import annotations

import pytest
from dpharness.bench.run import cpu_share, runner
from dpharness.bench.run.cpu_share import CpuShare

STAT = """cpu  900 0 300 5000 10 0 5 3 0 0
cpu0 100 1 20 900 1 2 3 4 50 0
cpu1 200 0 40 800 0 0 0 0 0 0
cpu2 7000 0 0 0 0 0 0 0
intr 12345 0 0
ctxt 999
"""


def test_busy_ticks_sum_the_allowed_processors(tmp_path, monkeypatch):
    f = tmp_path / "stat"
    f.write_text(STAT)
    monkeypatch.setattr(cpu_share, "_STAT", str(f))
    # user + nice + system + irq + softirq + steal; guest (already in user) and idle/iowait are not busy
    assert cpu_share._busy_ticks({0}) == 100 + 1 + 20 + 2 + 3 + 4
    assert cpu_share._busy_ticks({0, 1}) == 130 + 240
    assert cpu_share._busy_ticks(None) == 130 + 240 + 7000  # the "cpu " total line is never read
    assert cpu_share._busy_ticks({5}) is None
    monkeypatch.setattr(cpu_share, "_STAT", str(tmp_path / "missing"))
    assert cpu_share._busy_ticks({0}) is None


def _share(readings: list[tuple[float, float, int | None]], n: int = 2) -> CpuShare:
    """A CpuShare over scripted (wall s, own CPU s, busy ticks) readings at 100 ticks per second."""
    it = iter(readings)
    share = CpuShare.__new__(CpuShare)
    share.cpus, share.n, share.hz = set(range(n)), n, 100.0
    share._reading = lambda: next(it)  # type: ignore[method-assign]
    share._last = share._reading()
    return share


def test_free_processors_discount_only_the_other_programs():
    share = _share([(0.0, 0.0, 0), (1.0, 1.0, 100), (2.0, 2.0, 300), (3.0, 2.0, 500), (3.05, 2.0, 600)])
    assert share.free() == 2.0  # our own process kept one processor busy: both are ours
    assert share.free() == 1.0  # another program used a whole processor
    assert share.free() == 1.0  # two others while we waited: at least one is counted for us
    # 50 ms is too short to be the next reference (10 ms ticks): measured against the last one
    assert share.free() == 1.0
    assert share._last == (3.0, 2.0, 500)


def test_without_proc_stat_every_processor_is_free():
    share = _share([(0.0, 0.0, None), (1.0, 1.0, None)], n=4)
    assert share.free() == 4.0


def test_a_real_reading_is_in_range():
    share = CpuShare()
    assert 1.0 <= share.free(min_interval=0.0) <= share.n


@pytest.mark.parametrize("n, per, free, worth", [
    (1000, 0.01, 2.0, True),     # 10 s left, both processors free: saves 5 s for 1 s of start-up
    (400, 0.01, 2.0, True),      # 4 s left: saves 2 s >= 1.5 x 1 s
    (200, 0.01, 2.0, False),     # 2 s left: saves 1 s, less than the margin
    (2000, 0.5, 1.0, False),     # 1000 s left, but another program holds one processor: saves nothing
    (1000, 0.01, 1.5, True),     # 10 s left, 1.5 free: saves 3.3 s >= 1.5 x (2 workers x 1 s / 1.5)
    (400, 0.01, 1.5, False),     # 4 s left, 1.5 free: saves 1.3 s < 2 s
])
def test_spread_estimate(n, per, free, worth, monkeypatch):
    monkeypatch.setattr(runner, "SPREAD_MARGIN", 1.5)
    ok, rest, saved, startup = runner._spread_estimate(n, per, 2, free, 1.0)
    speedup = max(1.0, min(2.0, free))
    assert rest == pytest.approx(n * per)
    assert saved == pytest.approx(rest * (1 - 1 / speedup))
    assert startup == pytest.approx(2 / speedup)
    assert ok == (saved > 0 and saved >= 1.5 * startup) == worth
    # what a new process pays once (data, lazy imports) counts in each worker's start-up
    assert not runner._spread_estimate(n, per, 2, free, 1.0 + rest)[0]
