"""Float audit of every registered mechanism: a pair search with and without floating-point events.

``python -m dpharness.bench.float_audit [--budget N] [--alpha A] [--seed S] [NAME ...]`` builds each
mechanism of ``mechanisms.available()`` (or the names given) from its ``example()`` and runs
``verifiers.statistical.search`` twice on the same seed: with ``float_events=True`` (events on the bit patterns
of the released doubles, :mod:`verifiers.events.floats`) and with ``float_events=False``. It prints
a markdown table (docs/floating-point.md, "Float audit of the registered mechanisms").

Mechanisms with finite outputs have no float events: they are listed as not applicable and not
searched. A flag with float events on and none with them off is a floating-point leak of this
implementation (its real-valued law is private; the doubles it releases are not).
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from dpharness import mechanisms, verifiers

__all__ = ["float_audit", "main"]


def _one(mech: Any, float_events: bool, budget: int, alpha: float, seed: int) -> dict[str, Any]:
    t0 = time.perf_counter()
    v = verifiers.search(mech, budget=budget, alpha=alpha, rng=seed, float_events=float_events)
    w = v.witness
    return {"violated": bool(v.violated), "support": bool(v.support_violation),
            "epsilon_lower": float(v.epsilon_lower), "pairs": v.pairs_tried,
            "calls": v.calls, "seconds": time.perf_counter() - t0,
            "event": None if w is None else str(w.event), "pair": None if w is None else w.pair_label}


def float_audit(names: list[str] | None = None, *, budget: int = 1_000_000, alpha: float = 1e-3,
                seed: int = 0) -> list[dict[str, Any]]:
    """One row per mechanism: its output kind and, for real outputs, both searches' results."""
    rows = []
    for name in names or mechanisms.available():
        mech, _ = mechanisms.registry.get(name).example()
        row: dict[str, Any] = {"name": name, "kind": mech.kind, "epsilon": float(mech.claim.epsilon)}
        if mech.kind == "finite":
            row["on"] = row["off"] = None
        else:
            row["on"] = _one(mech, True, budget, alpha, seed)
            row["off"] = _one(mech, False, budget, alpha, seed)
        rows.append(row)
    return rows


def _cell(r: dict[str, Any] | None) -> str:
    if r is None:
        return "n/a"
    flag = ("**flagged** (support violation)" if r["support"] else "**flagged**") if r["violated"] else "not flagged"
    return f"{flag}, eps >= {r['epsilon_lower']:.3g}"


def table(rows: list[dict[str, Any]]) -> str:
    """Markdown table of :func:`float_audit` rows."""
    out = ["| mechanism | output | claimed eps | float events on | float events off | time on/off (s) |",
           "|---|---|---|---|---|---|"]
    for r in rows:
        if r["on"] is None:
            out.append(f"| `{r['name']}` | finite | {r['epsilon']:g} | finite output: not applicable | "
                       "not applicable | - |")
            continue
        secs = f"{r['on']['seconds']:.1f} / {r['off']['seconds']:.1f}"
        out.append(f"| `{r['name']}` | {r['kind']} | {r['epsilon']:g} | {_cell(r['on'])} | {_cell(r['off'])} | {secs} |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m dpharness.bench.float_audit", description=__doc__.splitlines()[0])
    p.add_argument("names", nargs="*", help="mechanism names (default: every registered mechanism)")
    p.add_argument("--budget", type=int, default=1_000_000, help="mechanism calls per search (default 10^6)")
    p.add_argument("--alpha", type=float, default=1e-3, help="family-wise error of each search (default 1e-3)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--witness", action="store_true", help="also print each flagged witness's pair and event")
    a = p.parse_args(argv)
    unknown = [n for n in a.names if n not in mechanisms.available()]
    if unknown:
        p.error(f"unknown mechanism(s) {', '.join(unknown)}; accepted: {', '.join(mechanisms.available())}")
    t0 = time.perf_counter()
    rows = float_audit(a.names or None, budget=a.budget, alpha=a.alpha, seed=a.seed)
    print(table(rows))
    if a.witness:
        for r in rows:
            for side in ("on", "off"):
                res = r[side]
                if res is not None and res["violated"]:
                    print(f"\n{r['name']} (float events {side}): pair {res['pair']!r}\n  event: {res['event']}")
    print(f"\nbudget {a.budget} calls per search, alpha {a.alpha}, seed {a.seed}; "
          f"wall time {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
