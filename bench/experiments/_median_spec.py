"""The ``median_accuracy`` config: its frozen dataclasses and their parsers (private helper).

:func:`parse` validates the keys documented in :mod:`.median_accuracy` and builds every mechanism
once per epsilon, q and data range, so a mechanism's own ValueError is reported at the config path
that caused it (``mechanisms[i].<param>``, ``epsilon``, ...). ``reference`` rows are parsed into
:class:`Reference` (published values and the tolerance rule; see docs/table1.md).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

from dpharness import mechanisms
from dpharness.mechanisms.base import ParamError
from dpharness.bench.config import REQUIRED, Ctx, did_you_mean
from dpharness.bench.config.data import DataSpec, parse_data
from dpharness.bench.run.tasks import format_value

__all__ = ["MechSpec", "RefRow", "Reference", "Spec", "parse", "METRICS", "METRIC_TEXT"]

_KEYS = (
    "data", "statistic", "q", "truth", "lower", "upper", "clip_output", "epsilon", "datasets", "draws",
    "metric", "scale", "title", "mechanisms", "reference",
)
# Set by the experiment, not per mechanism.
_RESERVED = {
    "epsilon": "comes from the top-level epsilon grid",
    "lower": "comes from the top-level lower/upper output range",
    "upper": "comes from the top-level lower/upper output range",
    "q": "comes from the top-level q (statistic: quantile)",
    "quantiles": "comes from the top-level q (a one-level list [q]; the median is [0.5])",
}
_TASK_FIELDS = ("data", "n", "q", "mechanism", "epsilon", "dataset", "name")
METRICS = {"abs_error": "mean_abs_error", "sq_error": "mean_sq_error"}
METRIC_TEXT = {"abs_error": "mean |error|", "sq_error": "mean squared error"}


@dataclass(frozen=True)
class MechSpec:
    """One mechanism row: display ``label``, registry ``name`` and its fixed parameters."""

    label: str
    name: str
    params: tuple[tuple[str, Any], ...]

    def kwargs(self, spec: "Spec", epsilon: float, q: float, bounds: tuple[float, float]) -> dict[str, Any]:
        """Constructor arguments: the fixed parameters plus epsilon, range, q, clip_output."""
        accepted = mechanisms.registry.parameters(self.name)
        kw: dict[str, Any] = dict(self.params)
        kw["epsilon"] = float(epsilon)
        for k, v in (("lower", bounds[0]), ("upper", bounds[1])):
            if k in accepted:
                kw[k] = float(v)
        if "q" in accepted:
            kw["q"] = float(q)
        elif "quantiles" in accepted:  # a many-quantile mechanism (e.g. independent_quantiles) at m = 1
            kw["quantiles"] = [float(q)]
        if "clip_output" in accepted and "clip_output" not in kw:
            kw["clip_output"] = spec.clip_output
        return kw

    def build(self, spec: "Spec", epsilon: float, q: float, bounds: tuple[float, float]) -> Any:
        return mechanisms.make(self.name, **self.kwargs(spec, epsilon, q, bounds))


@dataclass(frozen=True)
class RefRow:
    """Published values for one mechanism: epsilon -> mean (and std), with its tolerance rule."""

    mechanism: str
    mean: tuple[tuple[float, float], ...]
    std: tuple[tuple[float, float], ...]
    abs_tol: float
    se_mult: float
    rel: float
    note: str


@dataclass(frozen=True)
class Reference:
    source: str
    note: str
    abs_tol: float
    se_mult: float
    rel: float
    rows: tuple[RefRow, ...]


@dataclass(frozen=True)
class Spec:
    data: tuple[DataSpec, ...]
    statistic: str
    q: tuple[float, ...]
    truth: str
    lower: float | None
    upper: float | None
    clip_output: bool
    epsilon: tuple[float, ...]
    datasets: int
    draws: int
    metric: str
    scale: float
    title: str
    mechanisms: tuple[MechSpec, ...]
    reference: Reference | None
    seed: int

    @property
    def suffix(self) -> str:
        return f"_x{format_value(self.scale)}" if self.scale != 1 else ""

    def bounds(self, d: DataSpec) -> tuple[float, float]:
        """The output range for data ``d``: its own ``lower``/``upper`` if declared, else the top-level one."""
        if d.bounds is not None:
            return d.bounds
        assert self.lower is not None and self.upper is not None
        return (self.lower, self.upper)

    def data_spec(self, label: str, n: int) -> DataSpec:
        for d in self.data:
            if d.label == label and d.size() == n:
                return d
        raise KeyError(f"no data {label!r} with n={n}")

    def mech(self, label: str) -> MechSpec:
        for m in self.mechanisms:
            if m.label == label:
                return m
        raise KeyError(f"no mechanism {label!r}")


def parse(raw: dict, ctx: Ctx) -> Spec:
    """Validate a median_accuracy config and build every mechanism once per epsilon (and q)."""
    ctx.reject_unknown(raw, _KEYS)
    if raw.get("data") is None:
        ctx.report("data", "is required (a generator, a statsmodels dataset+column, or a csv+column)")
    data = parse_data(raw["data"], ctx.at("data")) if raw.get("data") is not None else ()
    statistic = ctx.choice(raw, "statistic", ("median", "quantile"), "median")
    if statistic == "quantile":
        qs = ctx.grid(raw, "q", float, lo=0, hi=1, lo_open=True, hi_open=True)
    else:
        if raw.get("q") is not None:
            ctx.report("q", "only with statistic: quantile (the median is q = 0.5)")
        qs = (0.5,)
    truth = ctx.choice(raw, "truth", ("lower", "upper", "average"), "lower")
    need_range = any(d.bounds is None for d in data)
    lower = ctx.number(raw, "lower", None if not need_range else REQUIRED)
    upper = ctx.number(raw, "upper", None if not need_range else REQUIRED)
    if (lower is None) != (upper is None):
        ctx.report("upper" if upper is None else "lower", "give both lower and upper, or neither")
        lower = upper = None
    if lower is not None and not lower < upper:
        if not ctx.failed("lower", "upper"):
            ctx.report("upper", f"must be > lower ({format_value(lower)}), got {format_value(upper)}")
        lower, upper = (None, None) if not need_range else (0.0, 1.0)  # placeholder: mistake recorded
    clip_output = ctx.get(raw, "clip_output", bool, True)
    eps = ctx.grid(raw, "epsilon", float, lo=0, lo_open=True)
    datasets = ctx.number(raw, "datasets", lo=1, integer=True)
    draws = ctx.number(raw, "draws", lo=1, integer=True)
    metric = ctx.choice(raw, "metric", tuple(METRICS), "abs_error")
    scale = ctx.number(raw, "scale", 100.0, lo=0, lo_open=True)
    title = ctx.get(raw, "title", str, "")
    spec0 = Spec(data, statistic, qs, truth, None if lower is None else float(lower),
                 None if upper is None else float(upper), clip_output, eps, int(datasets), int(draws),
                 metric, float(scale), title, (), None, int(ctx.seed))
    for d in data:  # data entirely outside its declared range is a mistake, not a result
        outside = d.outside(spec0.bounds(d)) if not ctx.failed("data", "lower", "upper") else None
        if outside:
            ctx.report(d.where or "data", outside + ("" if d.bounds else " (the top-level lower/upper)"))
    mechs = _parse_mechanisms(raw, ctx, spec0)
    spec1 = _replace(spec0, mechanisms=mechs)
    # a wrong or missing epsilon grid is one mistake: the reference's epsilon keys are not checked
    # against a grid that is not there (no follow-on errors)
    grid_ok = not ctx.failed("epsilon")
    reference = (_parse_reference(raw.get("reference"), ctx.at("reference"), spec1, grid_ok)
                 if raw.get("reference") is not None else None)
    return _replace(spec1, reference=reference)


def _replace(spec: Spec, **kw: Any) -> Spec:
    from dataclasses import replace

    return replace(spec, **kw)


def _parse_mechanisms(raw: dict, ctx: Ctx, spec: Spec) -> tuple[MechSpec, ...]:
    entries = ctx.get(raw, "mechanisms", list)
    if not entries and not ctx.failed("mechanisms"):
        ctx.report("mechanisms", "must list at least one mechanism")
    out: list[MechSpec] = []
    where: dict[str, str] = {}
    for i, entry in enumerate(entries):
        c = ctx.at("mechanisms", i)
        entry = c.require_mapping(entry)
        name = c.get(entry, "name", str)
        if name not in mechanisms.available():
            avail = mechanisms.available()
            c.report("name", f"unknown mechanism {name!r}{did_you_mean(name, avail)}; accepted: {', '.join(avail) or '(none registered)'}")
            continue
        accepted = mechanisms.registry.parameters(name)
        label = c.get(entry, "label", str, name)
        axes: dict[str, tuple] = {}
        for k, v in entry.items():
            if k in ("label", "name"):
                continue
            if k in _RESERVED:
                c.report(k, f"is not set per mechanism: it {_RESERVED[k]}")
                continue
            if k not in accepted or k in _TASK_FIELDS:
                ok = [p for p in accepted if p not in _RESERVED and p not in _TASK_FIELDS]
                c.report(k, f"unknown parameter of {name}{did_you_mean(k, ok)}; accepted: label, name, {', '.join(ok)}")
                continue
            axes[k] = c.grid(entry, k, object)
            for j, val in enumerate(axes[k]):
                if isinstance(val, (dict, list)) or val is None:
                    c.report(f"{k}[{j}]" if isinstance(v, list) else k, f"must be a scalar (number, string or true/false), got {val!r}")
        if c.failed(""):
            continue  # building it would only repeat the mistakes above
        if spec.statistic == "quantile" and "q" not in accepted and "quantiles" not in accepted \
                and any(q != 0.5 for q in spec.q):
            c.report("name", f"{name} has no q parameter, so it cannot estimate quantiles q={', '.join(map(format_value, spec.q))}")
            continue
        varying = [k for k, v in axes.items() if len(v) > 1]
        for combo in itertools.product(*axes.values()):
            params = dict(zip(axes, combo))
            lab = label
            if "{" in label:
                try:
                    lab = label.format(**params)
                except (KeyError, IndexError, ValueError) as exc:
                    c.report("label", f"placeholder {exc} is not one of this mechanism's parameters ({', '.join(axes)})")
                    break
            elif varying:
                lab += " (" + ", ".join(f"{k}={format_value(params[k])}" for k in varying) + ")"
            if lab in where:
                c.report("label", f"duplicate label {lab!r} (also {where[lab]}); labels name table rows and must be unique")
                break
            where[lab] = c.prefix
            ms = MechSpec(lab, name, tuple(params.items()))
            if not _check_build(ms, spec, c, entry):
                break
            out.append(ms)
    return tuple(out)


def _check_build(ms: MechSpec, spec: Spec, c: Ctx, entry: dict) -> bool:
    """Build the mechanism for every epsilon, q and data range; map its ValueError to the config
    field (recorded; False after the first failure)."""
    ranges = list(dict.fromkeys(spec.bounds(d) for d in spec.data))
    if not spec.data and spec.lower is not None:  # the data has a mistake: check with the top-level range
        ranges = [(spec.lower, spec.upper)]
    for eps, q, bounds in itertools.product(spec.epsilon, spec.q, ranges):
        try:
            ms.build(spec, eps, q, bounds)
        except (ValueError, TypeError) as exc:
            msg = str(exc)
            word = exc.field if isinstance(exc, ParamError) else ""  # the parameter the builder refused
            if isinstance(exc, ParamError) and word in entry and word not in ("label", "name"):
                v = entry[word]
                path = word
                if isinstance(v, list):
                    val = dict(ms.params).get(word)
                    path = f"{word}[{v.index(val)}]" if val in v else word
                c.report(path, exc.detail)
            elif word == "epsilon":
                c.report("epsilon", f"{msg} (from the epsilon grid, epsilon={format_value(eps)})")
            elif word in ("lower", "upper"):
                c.report("name", f"{ms.name} rejects the output range: {msg}")
            else:
                c.report("", f"{ms.name}: {msg}")
            return False
    return True


def _parse_tol(raw: Any, ctx: Ctx, base: tuple[float, float, float]) -> tuple[float, float, float]:
    if raw is None:
        return base
    ctx.reject_unknown(raw, ("abs", "se", "rel"))
    return (
        float(ctx.number(raw, "abs", base[0], lo=0)),
        float(ctx.number(raw, "se", base[1], lo=0)),
        float(ctx.number(raw, "rel", base[2], lo=0)),
    )


def _parse_eps_map(raw: Any, ctx: Ctx, key: str, spec: Spec, grid_ok: bool = True) -> tuple[tuple[float, float], ...]:
    m = ctx.get(raw, key, dict, {})
    out = []
    for e, v in m.items():
        ok_e = isinstance(e, (int, float)) and not isinstance(e, bool)
        if not ok_e or (grid_ok and float(e) not in spec.epsilon):
            ctx.report(f"{key}.{e}", f"keys are epsilon values of the grid ({', '.join(map(format_value, spec.epsilon))}), got {e!r}")
            continue
        val = ctx.check_number(v, f"{key}.{e}", lo=0)
        out.append((float(e), float(val)))
    return tuple(out)


def _parse_reference(raw: Any, ctx: Ctx, spec: Spec, grid_ok: bool = True) -> Reference:
    ctx.reject_unknown(raw, ("source", "note", "tolerance", "rows"))
    source = ctx.get(raw, "source", str, "")
    note = ctx.get(raw, "note", str, "")
    base = _parse_tol(ctx.get(raw, "tolerance", dict, None), ctx.at("tolerance"), (0.0, 3.0, 0.0))
    rows_raw = ctx.get(raw, "rows", list)
    labels = [m.label for m in spec.mechanisms]
    rows = []
    for i, r in enumerate(rows_raw):
        c = ctx.at("rows", i)
        c.reject_unknown(r, ("mechanism", "mean", "std", "tolerance", "note"))
        lab = c.get(r, "mechanism", str)
        if lab not in labels and not ctx.failed():  # (a mechanism with a mistake has no label yet)
            c.report("mechanism", f"no mechanism labelled {lab!r}{did_you_mean(lab, labels)}; labels: {', '.join(labels)}")
        mean = _parse_eps_map(r, c, "mean", spec, grid_ok)
        if not mean and not c.failed("mean"):
            c.report("mean", "is required: a mapping epsilon -> published mean")
        std = _parse_eps_map(r, c, "std", spec, grid_ok)
        tol = _parse_tol(c.get(r, "tolerance", dict, None), c.at("tolerance"), base)
        rows.append(RefRow(lab, mean, std, *tol, c.get(r, "note", str, "")))
    return Reference(source, note, *base, tuple(rows))
