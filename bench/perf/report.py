"""Text of a benchmark run: the ratio table, the median speed goal, and the closing summary.

Everything here reads the JSON document (rows, skipped, notes, environment) and returns text;
nothing prints -- the CLI does. "Peer not installed" is said once, with the install hint once.
"""

from __future__ import annotations

from typing import Any

from dpharness.bench.peers import INSTALL_HINT
from dpharness.bench.perf.plan import SECTIONS
from dpharness.bench.perf.rows import N_LABEL

__all__ = [
    "GOAL_N",
    "GOAL_RATIO",
    "fmt_ratio",
    "fmt_seconds",
    "format_goal",
    "format_skips",
    "format_summary",
    "format_table",
    "median_goal",
]

GOAL_RATIO = 2.0  # the speed goal: every dpharness median within 2x of np.partition ...
GOAL_N = 10**7  # ... at n = 1e7 (at small n, fixed per-call costs dominate: not assessed there)
#: the note run_bench records when a peer was skipped (the summary says the hint once instead)
PEER_HINT_NOTE = f"some peers were skipped; {INSTALL_HINT}"


def fmt_seconds(s: float | None) -> str:
    if s is None:
        return "-"
    if s >= 100:
        return f"{s:.0f}s"
    if s >= 1:
        return f"{s:.2f}s"
    if s >= 1e-3:
        return f"{s * 1e3:.3g}ms"
    return f"{s * 1e6:.3g}us"


def fmt_ratio(r: float | None) -> str:
    return "-" if r is None else (f"{r:.3g}x" if r < 100 else f"{r:.0f}x")


def format_table(rows: list[dict[str, Any]]) -> str:
    """One line per (section, n, implementation): time and its ratio to every floor and peer."""
    groups: dict[tuple[str, int, str], dict[str, Any]] = {}
    floors_by_sec: dict[str, list[str]] = {}
    peers_by_sec: dict[str, list[str]] = {}
    for r in rows:
        g = groups.setdefault((r["section"], r["n"], r["name"]), {"row": r, "floor": {}, "peer": {}})
        if r["floor"]:
            g["floor"][r["floor"]] = r["ratio_to_floor"]
            floors_by_sec.setdefault(r["section"], [])
            if r["floor"] not in floors_by_sec[r["section"]]:
                floors_by_sec[r["section"]].append(r["floor"])
        if r["peer"]:
            g["peer"][r["peer"]] = r["ratio_to_peer"]
            peers_by_sec.setdefault(r["section"], [])
            if r["peer"] not in peers_by_sec[r["section"]]:
                peers_by_sec[r["section"]].append(r["peer"])
    lines: list[str] = []
    for sec in SECTIONS:
        keys = [k for k in groups if k[0] == sec]
        if not keys:
            continue
        fl, pe = floors_by_sec.get(sec, []), peers_by_sec.get(sec, [])
        head = ([N_LABEL[sec], "implementation", "seconds [min-max]", "reps"] + [f"/{f}" for f in fl]
                + [f"/{p}" for p in pe] + ["note"])
        body = []
        for key in keys:
            g = groups[key]
            r = g["row"]
            t = f"{fmt_seconds(r['seconds'])} [{fmt_seconds(r['seconds_min'])}-{fmt_seconds(r['seconds_max'])}]"
            if r["extrapolated"]:
                t += f" (from {r['measured_size']:g})"
            body.append([f"{key[1]:g}", key[2], t, str(r["repeats"])]
                        + [fmt_ratio(g["floor"].get(f)) for f in fl]
                        + [fmt_ratio(g["peer"].get(p)) for p in pe] + [r["note"] or ""])
        widths = [max(len(h), *(len(b[i]) for b in body)) for i, h in enumerate(head)]
        lines.append(f"== {sec} ==")
        lines.append("  ".join(h.ljust(w) for h, w in zip(head, widths)).rstrip())
        for b in body:
            lines.append("  ".join(c.ljust(w) for c, w in zip(b, widths)).rstrip())
        lines.append("")
    return "\n".join(lines)


def median_goal(rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The speed goal at the largest median n: each median's ratio to np.partition (vs 2x)."""
    med = [r for r in rows if r["section"] == "median" and r["floor"] == "np.partition"
           and r["kind"] in ("dpharness", "peer") and r["ratio_to_floor"] is not None]
    if not med:
        return None
    n = max(r["n"] for r in med)
    assessed = n >= GOAL_N
    seen: dict[str, dict[str, Any]] = {}
    for r in med:
        if r["n"] == n and r["name"] not in seen:
            met = r["ratio_to_floor"] <= GOAL_RATIO if r["kind"] == "dpharness" and assessed else None
            seen[r["name"]] = {"name": r["name"], "kind": r["kind"], "ratio_to_partition": r["ratio_to_floor"],
                               "met": met}
    return {"n": n, "goal_ratio": GOAL_RATIO, "goal_n": GOAL_N, "assessed": assessed,
            "rows": list(seen.values())}


def format_goal(goal: dict[str, Any] | None) -> str:
    """The goal block: one line per median with its ratio to np.partition and the verdict."""
    if not goal:
        return ""
    assessed = goal.get("assessed", True)
    lines = [f"goal: every dpharness median within {goal['goal_ratio']:g}x of np.partition at n={goal['n']:g}"
             + ("" if assessed else f" -- not assessed: the goal is stated at n={goal.get('goal_n', GOAL_N):g} "
                "(at small n fixed per-call costs dominate); ratios shown for information")]
    for g in goal["rows"]:
        r = g["ratio_to_partition"]
        if g["kind"] != "dpharness":
            verdict = "peer"
        elif not assessed:
            verdict = "n/a"
        else:
            verdict = "met" if g["met"] else f"MISSED by {r / goal['goal_ratio']:.2g}x"
        lines.append(f"  {g['name']:<48} {fmt_ratio(r):>8}  {verdict}")
    return "\n".join(lines)


def format_skips(skipped: list[dict[str, str]]) -> list[str]:
    """One line per skip, except peers whose library is not installed: one line for all of them.

    The install hint (part of every peer's skip reason in the JSON) is printed once.
    """
    missing_libs: list[str] = []
    missing_names: list[str] = []
    lines: list[str] = []
    hint_needed = False
    for s in skipped:
        reason = s["reason"]
        has_hint = reason.endswith(INSTALL_HINT)
        if has_hint and " is not installed" in reason:
            lib = reason.split(" is not installed", 1)[0]
            if lib not in missing_libs:
                missing_libs.append(lib)
            if s["name"] not in missing_names:
                missing_names.append(s["name"])
            continue
        if has_hint:
            reason = reason[: -len(INSTALL_HINT)].rstrip("; ")
            hint_needed = True
        lines.append(f"skipped: [{s['section']}] {s['name']}: {reason}")
    if missing_libs:
        lines.insert(0, f"skipped: peer libraries not installed: {', '.join(missing_libs)} "
                        f"(not measured: {', '.join(missing_names)}); {INSTALL_HINT}")
    elif hint_needed:
        lines.append(f"peers: {INSTALL_HINT}")
    return lines


def format_summary(doc: dict[str, Any], json_path: Any) -> str:
    """Everything printed after the run: table, goal, skips, notes, machine, files, wall time."""
    out = [format_table(doc["rows"])]
    if doc.get("median_goal"):
        out += [format_goal(doc["median_goal"]), ""]
    out += format_skips(doc["skipped"])
    out += [f"note: {note}" for note in doc["notes"] if note != PEER_HINT_NOTE]
    env = doc["environment"]
    load = env.get("load_average")
    out.append(f"machine: {env['cpu_model']}, {env['cpu_count']} cores, load {load[0]:.2f} at start"
               if load else f"machine: {env['cpu_model']}, {env['cpu_count']} cores")
    secs = doc.get("section_seconds") or {}
    if secs:
        out.append("sections: " + ", ".join(f"{k} {v:.1f} s" for k, v in secs.items()))
    out.append(f"wrote {json_path}" + (f" and {doc['figure']}" if doc.get("figure") else ""))
    out.append(f"wall time {doc['wall_seconds']:.1f} s")
    return "\n".join(out)
