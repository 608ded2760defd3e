"""Data sources for experiments: random generators, real data shipped with statsmodels, CSV files.

A config's ``data:`` is one mapping or a list of them. Each mapping names exactly one source:

``generator: NAME`` with ``n`` and the generator's parameters (below); every parameter, ``n``
included, may be a list, which expands into a grid of data specs::

    data: {generator: normal, n: [100, 1000, 10000], loc: 0, scale: 1}
    data: {generator: mixture, n: 1000, components: [{generator: normal, loc: -3, weight: 0.3},
                                                      {generator: normal, loc: 2, weight: 0.7}]}

``dataset: NAME`` and ``column: COL`` -- real survey data shipped with ``statsmodels.datasets``
(offline; e.g. ``fair``: age, yrs_married; ``anes96``: age, income, educ);

``csv: PATH`` and ``column: COL`` -- a numeric column of a CSV file; a relative PATH is read from
the config file's folder.

Real data is used as is (``sample: full``, every "dataset" is the same column, so repetitions only
vary the mechanism's noise), or resampled ``n`` rows per dataset with ``sample: bootstrap`` (with
replacement) or ``sample: subsample`` (without). Rows with missing values are dropped.

Optional ``lower``/``upper`` declare this data's own range (used instead of the experiment's
top-level range, e.g. ages in [0, 120] next to income codes in [1, 24]). Optional ``label`` names the data in tables and task keys (default: the generator name, or
``dataset.column``, plus the grid parameters that vary). Datasets are generated from
:func:`bench.tasks.data_rng` keyed by :meth:`DataSpec.data_key`, which depends on the data's
identity (source and parameters, not the label) and the dataset index only.
"""

from __future__ import annotations

import functools
import itertools
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable

import numpy as np

from .config import Ctx
from .tasks import format_value

__all__ = ["GENERATORS", "DataSpec", "parse_data", "statsmodels_column", "csv_column"]


@dataclass(frozen=True)
class _Gen:
    params: dict[str, float]  # name -> default (None = required)
    positive: tuple[str, ...]  # parameters that must be > 0
    draw: Callable[[np.random.Generator, int, dict], np.ndarray]
    doc: str


def _integers(rng: np.random.Generator, n: int, p: dict) -> np.ndarray:
    return rng.integers(int(p["low"]), int(p["high"]), size=n, endpoint=True).astype(np.float64)


#: The random generators: name -> parameters (defaults), positive parameters, sampler.
GENERATORS: dict[str, _Gen] = {
    "normal": _Gen({"loc": 0.0, "scale": 1.0}, ("scale",), lambda r, n, p: r.normal(p["loc"], p["scale"], n), "N(loc, scale^2)"),
    "uniform": _Gen({"low": 0.0, "high": 1.0}, (), lambda r, n, p: r.uniform(p["low"], p["high"], n), "U[low, high)"),
    "laplace": _Gen({"loc": 0.0, "scale": 1.0}, ("scale",), lambda r, n, p: r.laplace(p["loc"], p["scale"], n), "Laplace(loc, scale)"),
    "student_t": _Gen(
        {"df": 3.0, "loc": 0.0, "scale": 1.0},
        ("df", "scale"),
        lambda r, n, p: p["loc"] + p["scale"] * r.standard_t(p["df"], n),
        "loc + scale * t(df) (heavy tails)",
    ),
    "cauchy": _Gen({"loc": 0.0, "scale": 1.0}, ("scale",), lambda r, n, p: p["loc"] + p["scale"] * r.standard_cauchy(n), "Cauchy(loc, scale)"),
    "lognormal": _Gen({"mean": 0.0, "sigma": 1.0}, ("sigma",), lambda r, n, p: r.lognormal(p["mean"], p["sigma"], n), "exp(N(mean, sigma^2)) (skewed)"),
    "exponential": _Gen({"scale": 1.0}, ("scale",), lambda r, n, p: r.exponential(p["scale"], n), "Exp(mean scale) (skewed)"),
    "gamma": _Gen({"shape": 2.0, "scale": 1.0}, ("shape", "scale"), lambda r, n, p: r.gamma(p["shape"], p["scale"], n), "Gamma(shape, scale)"),
    "poisson": _Gen({"lam": 5.0}, ("lam",), lambda r, n, p: r.poisson(p["lam"], n).astype(np.float64), "Poisson(lam) counts (ties)"),
    "integers": _Gen({"low": 0.0, "high": 10.0}, (), _integers, "uniform integers in [low, high] (ties)"),
    "constant": _Gen({"value": 0.0}, (), lambda r, n, p: np.full(n, float(p["value"])), "n copies of value (all ties)"),
}
_SOURCES = ("generator", "dataset", "csv")
_MAX_N = 10**8


@functools.lru_cache(maxsize=32)
def statsmodels_column(dataset: str, column: str) -> np.ndarray:
    """The numeric column of a ``statsmodels.datasets`` dataset, NaN rows dropped (read-only array)."""
    import importlib

    mod = importlib.import_module(f"statsmodels.datasets.{dataset}")
    frame = mod.load_pandas().data
    x = np.asarray(frame[column].dropna(), dtype=np.float64)
    x.setflags(write=False)
    return x


@functools.lru_cache(maxsize=32)
def csv_column(path: str, column: str) -> np.ndarray:
    """The numeric column of a CSV file, NaN rows dropped (read-only array)."""
    import pandas as pd

    frame = pd.read_csv(path, usecols=[column])
    x = np.asarray(pd.to_numeric(frame[column], errors="raise").dropna(), dtype=np.float64)
    x.setflags(write=False)
    return x


def _statsmodels_datasets() -> list[str]:
    import pkgutil

    import statsmodels.datasets as smd

    skip = {"utils", "tests", "template_data"}
    return sorted(m.name for m in pkgutil.iter_modules(smd.__path__) if not m.name.startswith("_") and m.name not in skip)


@dataclass(frozen=True)
class DataSpec:
    """One data source after grid expansion.

    Attributes
    ----------
    label : str
        Shown in tables; part of task keys.
    source : {"generator", "dataset", "csv"}
    name : str
        Generator name, statsmodels dataset name, or CSV path (as written in the config).
    params : tuple of (str, value)
        Generator parameters (sorted; defaults filled in), or ``(("column", COL),)``; a mixture has
        ``(("components", ((name, weight, params), ...)),)``.
    n : int or None
        Rows per dataset (None: the whole real column).
    sample : {"generate", "full", "bootstrap", "subsample"}
    path : str or None
        Absolute CSV path (resolved against the config's folder).
    bounds : (float, float) or None
        A declared range ``lower``/``upper`` for this data (e.g. ages in [0, 120]); experiments use
        it instead of their top-level range. It never depends on the data values.
    """

    label: str
    source: str
    name: str
    params: tuple
    n: int | None
    sample: str = "generate"
    path: str | None = None
    bounds: tuple[float, float] | None = None

    @property
    def identity(self) -> str:
        """Canonical text of the data's identity (source + parameters, not the label)."""
        if self.source == "generator":
            return f"{self.name}({_fmt_params(self.params)})"
        col = dict(self.params)["column"]
        return f"{self.source}:{self.name}[{col}]/{self.sample}"

    def data_key(self, dataset: int) -> str:
        """Key of the ``data_rng`` stream for dataset ``dataset``."""
        n = "all" if self.n is None else str(self.n)
        return f"{self.identity}|n={n}|dataset={dataset}"

    def size(self) -> int:
        """Rows per dataset (for real data with ``sample: full``, the column length)."""
        if self.n is not None:
            return self.n
        return int(self._column().size)

    def _column(self) -> np.ndarray:
        col = dict(self.params)["column"]
        if self.source == "dataset":
            return statsmodels_column(self.name, col)
        return csv_column(self.path or self.name, col)

    def generate(self, rng: np.random.Generator) -> np.ndarray:
        """One dataset (1-D float64) drawn with ``rng``; real data with ``sample: full`` ignores rng."""
        if self.source == "generator":
            return _draw(self.name, dict(self.params), int(self.n), rng)  # type: ignore[arg-type]
        col = self._column()
        if self.sample == "full":
            return col.copy()
        if self.sample == "bootstrap":
            return col[rng.integers(0, col.size, size=self.n)]
        return col[rng.choice(col.size, size=self.n, replace=False)]


def _fmt_params(params: tuple) -> str:
    parts = []
    for k, v in params:
        if k == "components":
            comps = ";".join(f"{w_fmt}*{nm}({_fmt_params(ps)})" for nm, w_fmt, ps in ((c[0], format_value(c[1]), c[2]) for c in v))
            parts.append(f"components=[{comps}]")
        else:
            parts.append(f"{k}={format_value(v)}")
    return ",".join(parts)


def _draw(name: str, params: dict, n: int, rng: np.random.Generator) -> np.ndarray:
    if name == "mixture":
        comps = params["components"]
        w = np.array([c[1] for c in comps], dtype=np.float64)
        counts = rng.multinomial(n, w / w.sum())
        parts = [_draw(c[0], dict(c[2]), int(k), rng) for c, k in zip(comps, counts)]
        # Shuffle so the components are interleaved (order matters to no median, but it might to others).
        return rng.permutation(np.concatenate(parts))
    return np.asarray(GENERATORS[name].draw(rng, n, params), dtype=np.float64)


def _check_gen_params(ctx: Ctx, name: str, p: dict, path: str) -> None:
    g = GENERATORS[name]
    for k in g.positive:
        ctx.check_number(p[k], f"{path}.{k}" if path else k, lo=0, lo_open=True)
    if name in ("uniform", "integers") and not p["low"] < p["high"]:
        ctx.error(f"{path}.high" if path else "high", f"must be > low ({format_value(p['low'])}), got {format_value(p['high'])}")
    if name == "integers":
        for k in ("low", "high"):
            ctx.check_number(p[k], f"{path}.{k}" if path else k, integer=True)


def _parse_component(raw: Any, ctx: Ctx) -> tuple:
    ctx.require_mapping(raw)
    name = ctx.choice(raw, "generator", tuple(GENERATORS))
    g = GENERATORS[name]
    ctx.reject_unknown(raw, ("generator", "weight", *g.params))
    weight = ctx.number(raw, "weight", lo=0, lo_open=True)
    p = {k: ctx.number(raw, k, d) for k, d in g.params.items()}
    _check_gen_params(ctx, name, p, "")
    return (name, weight, tuple(sorted(p.items())))


def parse_data(raw: Any, ctx: Ctx) -> tuple[DataSpec, ...]:
    """Parse ``data:`` (a mapping or a list of them) into expanded :class:`DataSpec` objects.

    ``ctx`` should point at ``data`` (``ctx.at("data")``). Labels must be unique per ``n``.
    """
    entries = raw if isinstance(raw, list) else [raw]
    if isinstance(raw, list) and not raw:
        ctx.error("", "must not be an empty list")
    out: list[DataSpec] = []
    for i, entry in enumerate(entries):
        c = ctx.at(i) if isinstance(raw, list) else ctx
        out.extend(_parse_entry(entry, c))
    seen: dict[tuple, int] = {}
    for s in out:
        k = (s.label, s.n)
        if k in seen:
            ctx.error("", f"two data entries share the label {s.label!r} (n={s.n}); give them distinct `label`s")
        seen[k] = 1
    return tuple(out)


def _parse_entry(raw: Any, ctx: Ctx) -> list[DataSpec]:
    ctx.require_mapping(raw)
    given = [s for s in _SOURCES if s in raw]
    if len(given) != 1:
        ctx.error("", f"name exactly one data source ({', '.join(_SOURCES)}); got {', '.join(given) or 'none'}")
    source = given[0]
    label = ctx.get(raw, "label", str, None)
    bounds = None
    if raw.get("lower") is not None or raw.get("upper") is not None:
        lo, hi = ctx.number(raw, "lower"), ctx.number(raw, "upper")
        if not lo < hi:
            ctx.error("upper", f"must be > lower ({format_value(lo)}), got {format_value(hi)}")
        bounds = (float(lo), float(hi))
    body = {k: v for k, v in raw.items() if k not in ("lower", "upper")}
    if source == "generator":
        specs = _parse_generator(body, ctx, label)
    else:
        specs = [_parse_real(body, ctx, label, source)]
    return [replace(s, bounds=bounds) for s in specs]


def _parse_generator(raw: dict, ctx: Ctx, label: str | None) -> list[DataSpec]:
    name = ctx.choice(raw, "generator", (*GENERATORS, "mixture"))
    if name == "mixture":
        ctx.reject_unknown(raw, ("generator", "label", "n", "components", "lower", "upper"))
        comps_raw = ctx.get(raw, "components", list)
        if not comps_raw:
            ctx.error("components", "must list at least one component")
        comps = tuple(_parse_component(c, ctx.at("components", j)) for j, c in enumerate(comps_raw))
        ns = ctx.grid(raw, "n", int, lo=1, hi=_MAX_N)
        return [DataSpec(label or "mixture", "generator", "mixture", (("components", comps),), int(n)) for n in ns]
    g = GENERATORS[name]
    ctx.reject_unknown(raw, ("generator", "label", "n", *g.params, "lower", "upper"))
    ns = ctx.grid(raw, "n", int, lo=1, hi=_MAX_N)
    axes = {k: ctx.grid(raw, k, float, d) for k, d in g.params.items()}
    varying = [k for k, v in axes.items() if len(v) > 1]
    out = []
    for combo in itertools.product(*axes.values()):
        p = dict(zip(axes, combo))
        _check_gen_params(ctx, name, p, "")
        lab = label or name
        if varying:
            lab += "(" + ", ".join(f"{k}={format_value(p[k])}" for k in varying) + ")"
        for n in ns:
            out.append(DataSpec(lab, "generator", name, tuple(sorted(p.items())), int(n)))
    return out


def _parse_real(raw: dict, ctx: Ctx, label: str | None, source: str) -> DataSpec:
    ctx.reject_unknown(raw, (source, "column", "label", "sample", "n", "lower", "upper"))
    name = ctx.get(raw, source, str)
    column = ctx.get(raw, "column", str)
    sample = ctx.choice(raw, "sample", ("full", "bootstrap", "subsample"), "full")
    path = None
    if source == "dataset":
        avail = _statsmodels_datasets()
        if name not in avail:
            ctx.error("dataset", f"unknown statsmodels dataset {name!r}; accepted: {', '.join(avail)}")
        import importlib

        cols = list(importlib.import_module(f"statsmodels.datasets.{name}").load_pandas().data.columns)
        if column not in cols:
            ctx.error("column", f"{name} has no column {column!r}; columns: {', '.join(map(str, cols))}")
        x = statsmodels_column(name, column)
    else:
        p = Path(name)
        if not p.is_absolute() and ctx.base_dir is not None:
            p = ctx.base_dir / p
        if not p.is_file():
            ctx.error("csv", f"file not found: {p}")
        path = str(p)
        import pandas as pd

        try:
            cols = list(pd.read_csv(path, nrows=0).columns)
        except Exception as exc:  # noqa: BLE001 - any parse failure is a config error
            ctx.error("csv", f"cannot read CSV: {exc}")
        if column not in cols:
            ctx.error("column", f"{p.name} has no column {column!r}; columns: {', '.join(map(str, cols))}")
        try:
            x = csv_column(path, column)
        except (ValueError, TypeError) as exc:
            ctx.error("column", f"column {column!r} is not numeric: {exc}")
    if x.size == 0:
        ctx.error("column", f"column {column!r} has no non-missing values")
    if not np.all(np.isfinite(x)):
        ctx.error("column", f"column {column!r} contains inf")
    if sample == "full":
        if "n" in raw and raw["n"] is not None:
            ctx.error("n", "only with sample: bootstrap or subsample (sample: full uses the whole column)")
        n = None
    else:
        hi = x.size if sample == "subsample" else _MAX_N
        n = int(ctx.number(raw, "n", lo=1, hi=hi, integer=True))
    default_label = f"{name}.{column}" if source == "dataset" else f"{Path(name).stem}.{column}"
    return DataSpec(label or default_label, source, name, (("column", column),), n, sample, path)


def describe_generators() -> str:
    """One line per generator: name, parameters with defaults, law."""
    lines = [f"{k}({', '.join(f'{p}={format_value(d)}' for p, d in g.params.items())}): {g.doc}" for k, g in GENERATORS.items()]
    lines.append("mixture(components=[{generator, weight, params...}, ...])")
    return "\n".join(lines)

