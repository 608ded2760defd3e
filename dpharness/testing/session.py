"""The state of one pytest session of the plugin: its seed (``--dp-seed``, else fresh entropy), its
budget factor (``--dp-budget``), the test being run and the records of its audits (user
properties, report sections and the lines of the terminal summary)."""

from __future__ import annotations

import hashlib
import math
import secrets
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Session:
    seed: int
    scale: float = 1.0
    seed_given: bool = False
    scale_given: bool = False
    item: Any = None
    records: list = field(default_factory=list)
    strict: bool = False
    jobs: int | None = None  # --dp-jobs: workers drawing each audit's samples
    #: assert_dp calls without rng so far, per test (their seeds are derived from the session seed)
    calls: dict = field(default_factory=dict)


#: The sessions configured and not yet unconfigured (pytest in pytest: the innermost is last).
SESSIONS: list[Session] = []


def active() -> Session | None:
    return SESSIONS[-1] if SESSIONS else None


def derive(seed: int, nodeid: str, index: int) -> int:
    """The seed of the ``index``-th ``dp_audit`` call of test ``nodeid`` in a session seeded with
    ``seed``: a function of these three only, so ``--dp-seed`` replays a test in any order or alone."""
    h = hashlib.sha256(f"dpharness.testing:{seed}:{nodeid}:{index}".encode()).digest()
    return int.from_bytes(h[:8], "big") >> 1


def session_of(config: Any) -> Session:
    s = getattr(config, "_dpharness_session", None)
    if s is None:  # the module was imported (e.g. the fixture re-exported in a conftest), not registered
        s = Session(seed=secrets.randbits(32))
        config._dpharness_session = s
        SESSIONS.append(s)
    return s


def replay_options(s: Session) -> str:
    return f"--dp-seed {s.seed}" + ("" if s.scale == 1.0 else f" --dp-budget {s.scale:g}")


def claim_text(v: Any) -> str:
    eps, dl = v.epsilon_claimed, v.delta_claimed
    return f"({eps:g}, {dl:g})-DP" if dl > 0 else f"{eps:g}-DP"


def _power_statement(v: Any) -> str:
    det = v.detectable_epsilon
    det_s = "inf (no loss is detectable at this budget)" if math.isinf(det) else f"{det:.3g}"
    return (f"no violation of {claim_text(v)} certified (epsilon >= {v.epsilon_lower:.3g} at alpha {v.alpha:g}); "
            f"this audit would have detected a privacy loss above {det_s} on an event of moderate probability; "
            f"events rarer than {v.blind_delta:.2g} under both datasets are invisible to it "
            f"({v.calls} mechanism calls, {v.pairs_tried} pair(s))")


def record_audit(session: Session | None, v: Any, label: str, seed: int) -> None:
    """The verdict ``v`` in the running test's report (user properties, ``--junitxml`` too) and in
    the session's terminal summary."""
    if session is None or session.item is None:
        return
    item = session.item
    props = [
        ("dp_mechanism", label),
        ("dp_claim", f"{claim_text(v)}, {v.neighbours} neighbours"),
        ("dp_violated", str(bool(v.violated))),
        ("dp_epsilon_lower", f"{v.epsilon_lower:.6g}"),
        ("dp_detectable_epsilon", f"{v.detectable_epsilon:.6g}"),
        ("dp_blind_delta", f"{v.blind_delta:.6g}"),
        ("dp_alpha", f"{v.alpha:g}"),
        ("dp_calls", str(v.calls)),
        ("dp_seed", str(seed)),
    ]
    item.user_properties.extend(props)
    if v.violated:
        text = (f"VIOLATED {label}: claimed {claim_text(v)}, epsilon >= {v.epsilon_lower:.4g} at alpha {v.alpha:g} "
                f"(seed {seed})")
    else:
        text = f"passed {label}: {_power_statement(v)}"
        item.user_properties.append(("dp_power", text[len("passed ") + len(label) + 2:]))
        item.add_report_section("call", "dpharness", text + "\n")
    session.records.append((item.nodeid, text))
