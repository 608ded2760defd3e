"""Building the mechanism of an audit, and the costly up-front checks of an audit config.

:func:`check` is what ``dpharness validate`` and ``dpharness audit`` / ``run`` (before any run
folder exists) run on a parsed :class:`~bench.audits.spec.AuditSet`: it builds every mechanism
(so a bad parameter value is a config error naming ``audits[i].mechanism.<param>``), checks each
given pair against the mechanism's *declared* neighbour relation and probes that the mechanism
accepts both datasets, and builds the pair list of every search. Missing peer libraries are
reported once for the whole file, with the install hint.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..config import ConfigError, Ctx

from .spec import AuditSet, AuditSpec, errors_at_once

__all__ = ["build_mechanism", "given_pairs", "check"]


def build_mechanism(spec: dict) -> tuple[Any, str, float | None]:
    """(mechanism, display name, true epsilon or None) from a config ``mechanism:`` mapping."""
    params = {k: v for k, v in spec.items() if k not in ("zoo", "registry", "peer", "suite", "example")}
    if "suite" in spec:
        from ...verifiers import suites

        e = suites.get(spec["suite"])
        return e.mechanism, e.qualified, e.true_epsilon
    if "zoo" in spec:
        from ...verifiers import zoo

        m = zoo.make(spec["zoo"], **params)
        return m, f"zoo:{spec['zoo']}", float(m.true_epsilon)
    if "registry" in spec:
        from ... import mechanisms

        if spec.get("example"):
            m, _ = mechanisms.registry.get(spec["registry"]).example()
        else:
            m = mechanisms.make(spec["registry"], **params)
        return m, spec["registry"], None
    from .. import peers

    return peers.build(spec["peer"], **params), f"peer:{spec['peer']}", None


def given_pairs(audit: AuditSpec, mech: Any) -> list[tuple[Any, Any, str]]:
    """(d1, d2, label) of an audit with given pairs (``witness``: the zoo mechanism's own)."""
    if audit.pairs == "witness":
        w = mech.witness()
        return [(w.d1, w.d2, "witness")]
    if audit.pairs == "suite":
        from ...verifiers import suites

        e = suites.get(audit.mechanism["suite"])
        return [(d1, d2, f"{e.name} pair {i}") for i, (d1, d2) in enumerate(e.pairs)]
    return [(np.asarray(d1), np.asarray(d2), f"pair {i}") for i, (d1, d2) in enumerate(audit.pairs)]


def _param_path(exc: Exception, params: dict) -> str:
    """``mechanism.<param>`` when the builder's message starts with a parameter's name."""
    head = str(exc).split(" ", 1)[0].rstrip(":,")
    return f"mechanism.{head}" if head in params else "mechanism"


def _accepts(mech: Any, data: Any) -> str | None:
    try:
        mech.sample(data, size=1, rng=0)
    except (ValueError, TypeError, IndexError) as exc:
        return str(exc)
    return None


def check(aset: AuditSet) -> None:
    """Build every mechanism and check every pair; one :class:`ConfigError` listing every mistake."""
    from ...verifiers import pairs_for
    from ...verifiers.neighbours import check_neighbours
    from ..peers import INSTALL_HINT, PeerUnavailable

    errors: list[str] = []
    missing: list[tuple[AuditSpec, str]] = []

    def err(a: AuditSpec, path: str, msg: str) -> None:
        note = f" (in {a.id})" if a.id.split(".", 1)[0] != a.id and "registry" in a.mechanism else ""
        try:
            Ctx(file=aset.file).at("audits", a.index).error(path, msg + note)
        except ConfigError as exc:
            errors.append(str(exc))

    for a in aset.audits:
        params = {k: v for k, v in a.mechanism.items() if k not in ("zoo", "registry", "peer", "suite", "example")}
        try:
            mech, _, _ = build_mechanism(a.mechanism)
        except PeerUnavailable as exc:
            missing.append((a, str(exc)))
            continue
        except (ValueError, TypeError) as exc:
            err(a, _param_path(exc, params), f"cannot build the mechanism: {exc}")
            continue
        if a.pairs == "search":
            try:
                pairs_for(mech, a.generator)
            except (ValueError, TypeError, AttributeError) as exc:
                err(a, "generator", f"no neighbouring pairs to search: {exc}")
            continue
        if a.pairs == "witness":
            continue
        for j, (d1, d2, _) in enumerate(given_pairs(a, mech)):
            try:
                check_neighbours(d1, d2, mech.claim)
            except (ValueError, TypeError) as exc:
                err(a, f"pairs[{j}]", f"{exc} (the mechanism declares {mech.claim.neighbours} neighbours"
                    + (f", sensitivity {mech.claim.sensitivity:g}" if mech.claim.sensitivity is not None else "")
                    + ")")
                continue
            for k, d in enumerate((d1, d2)):
                why = _accepts(mech, d)
                if why is not None:
                    err(a, f"pairs[{j}][{k}]", f"the mechanism rejects this dataset: {why}")
    if missing:
        libs: list[str] = []
        for _, why in missing:
            lib = why.split(" ", 1)[0]
            if lib not in libs:
                libs.append(lib)
        first = missing[0][0]
        more = f" and {len(missing) - 1} more peer audit(s)" if len(missing) > 1 else ""
        errors.append(f"{aset.file}: audits[{first.index}].mechanism.peer{more}: peer libraries not usable: "
                      f"{', '.join(libs)} ({missing[0][1].split(';', 1)[0]}); {INSTALL_HINT}")
    if errors:
        raise errors_at_once(aset.file, errors)
