"""Turn any plain function into an auditable mechanism, without subclassing anything."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from dpharness.mechanisms.base import ParamError, PrivacyClaim, as_rng, check_choice, check_size
from dpharness.mechanisms.contracts import OUTPUT_KINDS, OutputKind
from dpharness.verifiers.events import event_families
from dpharness.verifiers.input_domains import parse_domain
from dpharness.verifiers.statistical.draws import as_labels, none_as_nan

__all__ = ["wrap", "WrappedMechanism"]


@dataclass(frozen=True, eq=False)
class WrappedMechanism:
    """A plain ``fn(data, size, rng) -> array`` with a declared privacy claim.

    ``kind`` is ``"finite"`` when outputs come from a finite set (the verifier then uses every
    output and unions of outputs as events) or ``"real"``. ``sample`` normalises ``rng`` (SPEC 7),
    calls ``fn(data, n, rng)`` once for all ``n`` draws and checks that ``n`` outputs came back.
    """

    fn: Callable[[Any, int, np.random.Generator], Any] = field(repr=False)
    claim: PrivacyClaim
    kind: OutputKind = "real"
    name: str = ""
    attributes: dict = field(default_factory=dict)
    #: Default of ``float_events`` in audits of this mechanism (:func:`verifiers.audit`).
    float_events: bool = False
    #: True when ``wrap`` was given no ``neighbours`` and chose add_remove (said in pair errors).
    neighbours_defaulted: bool = False

    @property
    def event_families(self) -> frozenset[str]:
        """The event families audits of this mechanism search by default (:mod:`verifiers.events`):
        the named set "all", plus ``floats`` when ``float_events`` is True."""
        return event_families("all", float_events=self.float_events)

    def __getattr__(self, item: str) -> Any:
        # Declared attributes (e.g. lower/upper bounds, candidates) for the pair generators.
        attrs = self.__dict__.get("attributes", {})
        if item in attrs:
            return attrs[item]
        raise AttributeError(item)

    def sample(self, data: Any, size: Any = None, rng: Any = None) -> np.ndarray:
        shape = check_size(size)
        n = int(np.prod(shape)) if shape else 1
        fname = self.name or "fn"
        raw = self.fn(data, n, as_rng(rng))
        try:
            # finite outputs may be lists of different lengths (one label each: as_labels)
            out = as_labels(raw) if self.kind == "finite" else none_as_nan(np.asarray(raw))
        except ValueError as exc:  # ragged lists and the like
            raise TypeError(f"{fname}(data, {n}, rng) must return an array of {n} outputs; numpy could not "
                            f"read what it returned ({type(raw).__name__}): {exc}. Real releases of "
                            "different lengths (answers up to a cutoff) need one width: pad each draw "
                            "with None or NaN (\"no answer\"), or declare kind='finite' to read each "
                            "draw as one label") from None
        if self.kind == "real" and out.dtype.kind not in "biuf":
            first = out.reshape(-1)[0] if out.size else None
            raise TypeError(
                f"{fname}(data, {n}, rng) returned {out.dtype} outputs (first: {first!r}), but kind='real' "
                "needs numbers; return a numeric array, or declare kind='finite' for outputs from a finite "
                "set of labels")
        if out.shape[:1] != (n,) and not (n == 1 and out.ndim == 0):
            raise ValueError(f"{fname}(data, {n}, rng) must return {n} outputs, got shape {out.shape}")
        out = out.reshape((n,) + out.shape[1:]) if out.ndim else out.reshape(1)
        return out.reshape(shape + out.shape[1:]) if shape else out[0]

    def params(self) -> dict[str, Any]:
        return {"name": self.name, "kind": self.kind, "claim": str(self.claim), **self.attributes}


def wrap(fn: Callable[[Any, int, np.random.Generator], Any], *, epsilon: float | None = None, delta: float = 0.0,
         neighbours: str | None = None, kind: OutputKind = "real", sensitivity: float | None = None,
         name: str = "", attributes: dict | None = None, float_events: bool = False,
         input_domain: Any = None, privacy_map: Callable[[Any], Any] | None = None,
         input_metric: str | None = None) -> WrappedMechanism:
    """Make ``fn(data, size, rng) -> np.ndarray`` auditable by :func:`verifiers.audit` / ``search``.

    Parameters
    ----------
    fn
        Returns ``size`` independent releases on ``data`` as an array (sample axis first); ``rng``
        is a :class:`numpy.random.Generator` (functions that cannot be seeded may ignore it, at the
        cost of reproducibility).
    epsilon, delta, neighbours, sensitivity
        The claim to audit (a :class:`mechanisms.PrivacyClaim`; ``neighbours`` is one of
        :data:`mechanisms.base.NEIGHBOURS`, default ``"add_remove"``).
    privacy_map, input_metric
        Instead of ``epsilon``/``delta``: the claim as a privacy map, ``privacy_map(d_in) ->
        epsilon`` or ``-> (epsilon, delta)`` for inputs at distance ``d_in`` under
        ``input_metric`` (one of :data:`verifiers.claims.INPUT_METRICS`, e.g.
        ``"symmetric_distance"``); each audited pair is held to the map at its own distance
        (:mod:`verifiers.claims`). ``neighbours`` then picks the pair generators (default: the
        metric's, :data:`verifiers.claims.DEFAULT_RELATION`) and ``sensitivity`` is the reference
        distance and generator step (default 1). The map must pickle (a module-level function or
        :class:`verifiers.claims.LinearMap`) for audits run in worker processes.
    kind
        ``"real"`` or ``"finite"`` (outputs from a finite set, e.g. an index).
    name
        Shown in reports.
    attributes
        Extra read-only attributes the pair generators use: ``lower``/``upper`` (data bounds
        for record datasets), ``candidates`` (labels), ``length`` (query vectors), and for
        ``neighbours="privacy_unit"`` the required ``max_contributions`` and the ``unit_column``
        (default 0), which become part of the claim.
    float_events
        Audit the binary representation of real outputs too by default (floating-point leaks;
        :mod:`verifiers.events.floats`). Off by default for ``wrap``: it is also how numpy
        re-implementations of paper mechanisms are audited, whose float arithmetic is not what
        is under test; library adapters (:mod:`dpharness.adapters`) turn it on.
    input_domain
        The set inputs range over (:mod:`verifiers.input_domains`): a list of values, ``{"bits":
        n}``, ``{"interval": [lo, hi]}`` or a domain object. It becomes part of the claim (under
        ``neighbours="local"`` any two of its elements are neighbours; under the record relations
        each record must lie in it) and the attribute ``input_domain`` the generators keep to.
    """
    if not callable(fn):
        raise TypeError(f"fn must be callable as fn(data, size, rng), got {type(fn).__name__} {fn!r}")
    check_choice(kind, "kind", OUTPUT_KINDS)
    if not isinstance(name, str):
        raise TypeError(f"name must be a string, got {name!r}")
    if attributes is not None and not isinstance(attributes, dict):
        raise TypeError(f"attributes must be a dict of read-only attributes or None, got {type(attributes).__name__}")
    attrs = dict(attributes or {})
    lo, hi = attrs.get("lower"), attrs.get("upper")
    if lo is not None and hi is not None:
        try:
            order = bool(np.all(np.asarray(lo, dtype=np.float64) < np.asarray(hi, dtype=np.float64)))
        except (TypeError, ValueError):  # bounds of label columns (text): no order to check
            order = True
        if not order:  # the generators would build data outside any sensible domain
            raise ParamError("attributes", f"attributes lower must be below upper (each column), got lower {lo!r}, "
                             f"upper {hi!r}")
    unit = {k: attrs[k] for k in ("unit_column", "max_contributions") if k in attrs}
    if input_domain is not None and attrs.get("input_domain") is not None:
        raise ParamError("input_domain", "input_domain is given both as an argument and in attributes: give it once")
    dom = parse_domain(input_domain if input_domain is not None else attrs.get("input_domain"))
    if dom is not None:
        attrs["input_domain"] = dom
    if privacy_map is not None or input_metric is not None:
        from dpharness.verifiers.claims import map_claim

        if privacy_map is None or input_metric is None:
            raise ValueError("a privacy-map claim needs both privacy_map=(d_in -> epsilon or (epsilon, delta)) and "
                             "input_metric= (e.g. 'symmetric_distance')")
        if epsilon is not None or delta:
            raise ValueError("give the claim once: epsilon/delta (a fixed claim) or privacy_map (epsilon and delta "
                             "at every distance), not both")
        if unit:
            raise ValueError("privacy_unit claims take epsilon=, not a privacy map")
        claim = map_claim(privacy_map, input_metric, neighbours=neighbours, d_in=sensitivity, input_domain=dom)
    else:
        if epsilon is None:
            raise TypeError("wrap needs the claim: epsilon= (and delta=), or privacy_map= with input_metric=")
        claim = PrivacyClaim(epsilon, delta, neighbours=neighbours or "add_remove", sensitivity=sensitivity,
                             input_domain=dom, **unit)
    if not isinstance(float_events, (bool, np.bool_)):
        raise TypeError(f"float_events must be True or False, got {float_events!r}")
    return WrappedMechanism(fn=fn, claim=claim, kind=kind, name=name or getattr(fn, "__name__", "fn"),
                            attributes=attrs, float_events=bool(float_events),
                            neighbours_defaulted=neighbours is None and privacy_map is None)
