"""What an audit returns: a frozen :class:`Verdict` carrying a replayable :class:`Witness`."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dpharness.verifiers.events import Event
from dpharness.verifiers.events.bits import FLOAT_KINDS

__all__ = ["Witness", "Verdict", "format_data"]


def format_data(d: Any, limit: int = 12) -> str:
    """Short text of a dataset for messages (first ``limit`` entries)."""
    a = np.asarray(d)
    if a.ndim == 0:
        return f"{a.item()!r}"
    flat = a.reshape(-1)
    items = ", ".join(f"{float(v):g}" if np.issubdtype(a.dtype, np.number) else repr(v) for v in flat[:limit])
    more = f", ... ({flat.size} records)" if flat.size > limit else ""
    return f"[{items}{more}]"


def event_family(event: Any) -> str:
    """``floats`` for a bit-pattern event, ``real-valued`` for any other (the verdict's event family)."""
    return "floats" if getattr(event, "kind", "") in FLOAT_KINDS else "real-valued"


def data_to_json(d: Any) -> str:
    """A dataset of a pair as one line of JSON, every value kept (:func:`data_from_json` reads it
    back): arrays with their dtype and shape, data frames by columns, scalars and lists as they
    are; "" for data of any other type (then the witness replays from its pair label only)."""
    import json

    from dpharness.verifiers.events.core import to_plain

    try:
        if hasattr(d, "columns") and hasattr(d, "dtypes"):  # a pandas DataFrame of records as rows
            spec: Any = {"frame": {str(c): to_plain(np.asarray(d[c])) for c in d.columns},
                         "dtypes": {str(c): str(t) for c, t in d.dtypes.items()}}
        elif isinstance(d, np.ndarray) and d.dtype != object:
            spec = {"array": to_plain(d), "dtype": d.dtype.str, "shape": list(d.shape)}
        elif isinstance(d, (bool, int, float, str, np.generic)) or d is None:
            spec = {"value": to_plain(d)}
        elif isinstance(d, (list, tuple)):
            spec = {"list": [json.loads(data_to_json(x)) for x in d]}
        else:
            return ""
        return json.dumps(spec, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError):  # values JSON cannot hold (objects, nested frames): no file replay
        return ""


def data_from_json(text: str | dict) -> Any:
    """The dataset :func:`data_to_json` wrote."""
    import json

    import pandas as pd

    from dpharness.verifiers.events.core import from_plain

    spec = json.loads(text) if isinstance(text, str) else text

    def num(v: Any) -> Any:
        return from_plain(v, as_tuple=False)

    if "frame" in spec:
        return pd.DataFrame({c: np.asarray(num(v)).astype(spec["dtypes"][c]) for c, v in spec["frame"].items()})
    if "array" in spec:
        return np.asarray(num(spec["array"]), dtype=np.dtype(spec["dtype"])).reshape(spec["shape"])
    if "list" in spec:
        return [data_from_json(x) for x in spec["list"]]
    return num(spec["value"])


@dataclass(frozen=True, eq=False)
class Witness:
    """Everything needed to replay a certification in CI (docs/auditing.md, "API").

    ``direction`` is ``"d1>d2"`` when the bound is on ln P[M(d1) in E] / P[M(d2) in E] and
    ``"d2>d1"`` otherwise. ``counts`` are the certification counts (under d1, under d2) out of
    ``draws`` certification draws (Poisson with mean ``samples`` per dataset);
    ``selection_counts`` those of the selection split out of ``selection_samples`` per dataset.
    Replay: ``verifiers.replay(mech, d1, d2, event=event, direction=direction, samples=samples,
    seed=seed, key=key, chunked=chunked)`` draws the very same certification samples (for a
    one-pair audit, ``key`` is (0,) and ``audit(mech, d1, d2, samples=samples, event=event,
    rng=seed)`` does too).
    """

    d1: Any
    d2: Any
    direction: str
    event: Event
    counts: tuple[int, int]
    samples: int
    seed: int
    selection_counts: tuple[int, int] = (0, 0)
    selection_samples: int = 0
    alpha_split: tuple[float, float] = (0.0, 0.0)
    pair_label: str = ""
    draws: tuple[int, int] = (0, 0)
    #: the key of the certification's draw streams under ``seed`` (a search's: the pair's index) and
    #: whether they were drawn in keyed chunks (``jobs=``): :func:`verifiers.replay` needs both
    key: tuple[int, ...] = (0,)
    chunked: bool = False

    def __str__(self) -> str:
        num, den = ("d1", "d2") if self.direction == "d1>d2" else ("d2", "d1")
        return (f"d1={format_data(self.d1)}, d2={format_data(self.d2)}, event {self.event}, "
                f"{self.counts[0]}/{self.draws[0]} under d1 vs {self.counts[1]}/{self.draws[1]} under d2 "
                f"(bound on P[{num}]/P[{den}]), seed {self.seed}")


@dataclass(frozen=True, eq=False)
class Verdict:
    """The result of an audit or a search.

    Attributes
    ----------
    epsilon_claimed, delta_claimed : float
        The mechanism's claim.
    epsilon_lower : float
        One-sided (1 - alpha) lower confidence bound on the epsilon the mechanism can satisfy at
        ``delta_claimed`` (0 when there is no evidence). Valid for the whole search: every pair,
        event and direction was selected on samples disjoint from the certification samples.
    epsilon_estimate : float
        Plug-in ln((p1 - delta)/p2) on the certification counts (inf when p2 = 0 < p1 - delta).
    delta_lower : float
        For (epsilon, delta) claims: lower confidence bound on delta at the claimed epsilon, from
        the same certified bounds (so ``violated`` iff ``delta_lower > delta_claimed``). Pure claims
        are certified by the conditional ratio bound, which says nothing about delta: 0.
    violated : bool
        ``epsilon_lower > epsilon_claimed`` (equivalently ``delta_lower > delta_claimed``).
    witness : Witness or None
        The certified pair, event, direction, counts, sample size and seed.
    support_violation : bool
        The certified event was never seen under the other dataset in selection nor certification,
        and certifies a violation: an output seen under one dataset that looks impossible under
        the other (true epsilon = inf; a black-box test can bound it but never prove it).
    detectable_epsilon : float
        The smallest privacy loss on a single event that this certification size detects at the
        median (most favourable event probability): losses below it can go unnoticed.
    blind_delta : float
        ``1 - alpha**(1/N)`` ≈ ln(1/alpha)/N: events rarer than this under both datasets are
        invisible to any black-box test with N certification samples.
    summary : str
        One human-readable paragraph.
    alpha : float
        The family-wise error level of ``epsilon_lower`` (and ``violated``).
    calls : int
        Mechanism draws used in total (both datasets, selection and certification).
    pairs_tried : int
        Number of dataset pairs examined (1 for :func:`verifiers.audit`).
    """

    epsilon_claimed: float
    delta_claimed: float
    epsilon_lower: float
    epsilon_estimate: float
    delta_lower: float
    violated: bool
    witness: Witness | None
    support_violation: bool
    detectable_epsilon: float
    blind_delta: float
    summary: str
    alpha: float = 0.05
    calls: int = 0
    pairs_tried: int = 1
    neighbours: str = ""
    extra: dict = field(default_factory=dict)

    def row(self) -> dict:
        """Flat scalars for a results table."""
        w = self.witness
        return {
            "epsilon_claimed": self.epsilon_claimed,
            "delta_claimed": self.delta_claimed,
            "epsilon_lower": self.epsilon_lower,
            "epsilon_estimate": self.epsilon_estimate,
            "delta_lower": self.delta_lower,
            "violated": self.violated,
            "support_violation": self.support_violation,
            "detectable_epsilon": self.detectable_epsilon,
            "blind_delta": self.blind_delta,
            "alpha": self.alpha,
            "calls": self.calls,
            "pairs_tried": self.pairs_tried,
            "d1": format_data(w.d1) if w else "",
            "d2": format_data(w.d2) if w else "",
            "direction": w.direction if w else "",
            "event": str(w.event) if w else "",
            "event_family": event_family(w.event) if w else "",
            "count_d1": w.counts[0] if w else 0,
            "count_d2": w.counts[1] if w else 0,
            "cert_samples": w.samples if w else 0,
            "cert_draws_d1": w.draws[0] if w else 0,
            "cert_draws_d2": w.draws[1] if w else 0,
            "witness_seed": str(w.seed) if w else "",
            # the witness in full, for a replay from the files (the columns above are for reading)
            "witness_key": " ".join(str(int(k)) for k in w.key) if w else "",
            "witness_chunked": bool(w.chunked) if w else False,
            "event_json": w.event.to_json() if w else "",
            "d1_json": data_to_json(w.d1) if w else "",
            "d2_json": data_to_json(w.d2) if w else "",
        }


def summarize(v: dict) -> str:
    """The one-paragraph summary from the verdict's fields (a dict, before freezing)."""
    eps_c, dl_c = v["epsilon_claimed"], v["delta_claimed"]
    claim = f"({eps_c:g}, {dl_c:g})-DP" if dl_c > 0 else f"{eps_c:g}-DP"
    conf = f"{100 * (1 - v['alpha']):g}%"
    w: Witness | None = v["witness"]
    est = v["epsilon_estimate"]
    est_s = "inf" if math.isinf(est) else f"{est:.3g}"
    if w is None:
        return (f"No event could be certified (no output was more likely under one dataset than the "
                f"other on the selection split): no evidence against the {claim} claim. "
                f"Blind spot: events of probability below {v['blind_delta']:.2g} under both datasets.")
    head = "VIOLATED" if v["violated"] else "No violation found"
    tail = ""
    if v["violated"]:
        sv = (" The event was never observed under the other dataset: a support violation "
              "(true epsilon is likely infinite; the bound is what this sample size can certify)."
              if v["support_violation"] else "")
        dl = f" At the claimed epsilon, delta >= {v['delta_lower']:.3g}." if v["delta_lower"] > 0 else ""
        fl = (" The witness is an event on the bits of the released doubles: a floating-point leak of this "
              "implementation (its real-valued law may well be private; see snapping or integer-grid noise)."
              if getattr(w.event, "kind", "") == "float" else
              " The witness tells which doubles the noise sampler can reach from a value computed from the data: a "
              "floating-point leak of this implementation (its real-valued law may well be private; see snapping "
              "or integer-grid noise)." if getattr(w.event, "kind", "") == "reachable" else "")
        tail = sv + dl + fl
    else:
        tail = (f" At this budget a privacy loss above {v['detectable_epsilon']:.3g} on an event of "
                f"moderate probability would have been detected; events rarer than "
                f"{v['blind_delta']:.2g} under both datasets are invisible to any black-box test.")
    return (f"{head}: claimed {claim} ({v['neighbours']} neighbours); with {conf} confidence over the "
            f"whole search (pairs tried: {v['pairs_tried']}, {v['calls']} mechanism calls), "
            f"epsilon >= {v['epsilon_lower']:.3g} (estimate {est_s}). Witness: {w}.{tail}")
