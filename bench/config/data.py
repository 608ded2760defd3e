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
top-level range, e.g. ages in [0, 120] next to income codes in [1, 24]). Data entirely outside its
range is a config error (:meth:`DataSpec.outside`: every point would be clipped to a bound); data
partly outside is clipped and counted (the ``clipped`` column of median_accuracy results).
Optional ``label`` names the data in tables and task keys (default: the generator name, or
``dataset.column``, plus the grid parameters that vary).

Bad data is refused when the config is read, naming the field and the source: a missing file or a
directory given as ``csv:``, an empty or non-UTF-8 file, a missing column (closest name offered), a
non-numeric cell (its row and line), infinities, or a column with no values left. Datasets are generated from
:func:`bench.run.tasks.data_rng` keyed by :meth:`DataSpec.data_key`, which depends on the data's
identity (source and parameters, not the label) and the dataset index only.
"""

from __future__ import annotations

import functools
import itertools
import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable

import numpy as np

from dpharness.bench.config.validation import Ctx
from dpharness.bench.config.values import did_you_mean
from dpharness.bench.run.tasks import format_value

__all__ = ["GENERATORS", "DataSpec", "parse_data", "statsmodels_column", "csv_column", "describe_generators"]


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
#: Where each generator's values lie (closed hull; parameters -> (low, high)); the others take
#: every real value. Used to refuse data that lies entirely outside the declared range.
_SUPPORT: dict[str, Callable[[dict], tuple[float, float]]] = {
    "uniform": lambda p: (p["low"], p["high"]),
    "integers": lambda p: (p["low"], p["high"]),
    "constant": lambda p: (p["value"], p["value"]),
    "lognormal": lambda p: (0.0, math.inf),
    "exponential": lambda p: (0.0, math.inf),
    "gamma": lambda p: (0.0, math.inf),
    "poisson": lambda p: (0.0, math.inf),
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
    """The numeric column of a CSV file, missing cells dropped (read-only array).

    Raises ValueError naming the first cell that is not a number (its row and file line).
    """
    import pandas as pd

    values = pd.read_csv(path, usecols=[column])[column]
    if not pd.api.types.is_numeric_dtype(values) or pd.api.types.is_bool_dtype(values):
        numeric = pd.to_numeric(values, errors="coerce")
        bad = np.flatnonzero(numeric.isna().to_numpy() & values.notna().to_numpy())
        if bad.size:
            i = int(bad[0])
            raise ValueError(f"column {column!r} is not numeric: row {i + 1} (line {i + 2} of the file) is "
                             f"{values.iloc[i]!r}" + (f", and {bad.size - 1} more such rows" if bad.size > 1 else ""))
        values = numeric
    x = np.asarray(values.dropna(), dtype=np.float64)
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
    where : str
        Dotted config path of the entry (``data`` or ``data[1]``), for messages; not identity.
    """

    label: str
    source: str
    name: str
    params: tuple
    n: int | None
    sample: str = "generate"
    path: str | None = None
    bounds: tuple[float, float] | None = None
    where: str = field(default="", compare=False)

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

    def outside(self, bounds: tuple[float, float]) -> str | None:
        """A message when every data point lies outside ``bounds`` = [lower, upper] (each would be
        clipped to a bound: the private statistic would say nothing about the data), else None.

        Decided without drawing: from the real column, or from the generator's support.
        """
        lo, hi = bounds
        if self.source == "generator":
            comps = dict(self.params)["components"] if self.name == "mixture" else ((self.name, 1.0, self.params),)
            hulls = [_SUPPORT[c[0]](dict(c[2])) if c[0] in _SUPPORT else (-math.inf, math.inf) for c in comps]
            if all(b < lo or a > hi for a, b in hulls):
                what = ", ".join(f"[{format_value(a)}, {format_value(b)}]" for a, b in hulls)
                return (f"every data point lies outside [lower, upper] = [{format_value(lo)}, {format_value(hi)}]: "
                        f"{self.name} takes values in {what}; each would be clipped to a bound")
            return None
        x = self._column()
        if x.size and np.all((x < lo) | (x > hi)):
            return (f"every data point lies outside [lower, upper] = [{format_value(lo)}, {format_value(hi)}]: "
                    f"{self.label} has values in [{format_value(float(x.min()))}, {format_value(float(x.max()))}]; "
                    f"each would be clipped to a bound")
        return None


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


def _check_gen_params(ctx: Ctx, name: str, p: dict) -> bool:
    """Cross-parameter rules of a generator (each parameter already read as a finite number)."""
    for k in GENERATORS[name].positive:
        if not ctx.failed(k):
            ctx.check_number(p[k], k, lo=0, lo_open=True)
    if name == "integers":
        for k in ("low", "high"):
            if not ctx.failed(k):
                ctx.check_number(p[k], k, integer=True)
    if name in ("uniform", "integers") and not p["low"] < p["high"] and not ctx.failed("low", "high"):
        ctx.report("high", f"must be > low ({format_value(p['low'])}), got {format_value(p['high'])}")
    return not ctx.failed("")


def _parse_component(raw: Any, ctx: Ctx) -> tuple | None:
    raw = ctx.require_mapping(raw)
    name = ctx.choice(raw, "generator", tuple(GENERATORS))
    if ctx.failed("generator"):
        return None
    g = GENERATORS[name]
    ctx.reject_unknown(raw, ("generator", "weight", *g.params))
    weight = ctx.number(raw, "weight", lo=0, lo_open=True)
    p = {k: ctx.number(raw, k, d) for k, d in g.params.items()}
    return (name, weight, tuple(sorted(p.items()))) if _check_gen_params(ctx, name, p) else None


def parse_data(raw: Any, ctx: Ctx) -> tuple[DataSpec, ...]:
    """Parse ``data:`` (a mapping or a list of them) into expanded :class:`DataSpec` objects.

    ``ctx`` should point at ``data`` (``ctx.at("data")``). Labels must be unique per ``n``.
    Mistakes are recorded in ``ctx``; an entry with one contributes no DataSpec.
    """
    entries = raw if isinstance(raw, list) else [raw]
    if isinstance(raw, list) and not raw:
        ctx.report("", "must not be an empty list")
    out: list[DataSpec] = []
    for i, entry in enumerate(entries):
        c = ctx.at(i) if isinstance(raw, list) else ctx
        out.extend(replace(s, where=c.prefix) for s in _parse_entry(entry, c))
    seen: set[tuple] = set()
    for s in out:
        if (s.label, s.n) in seen:
            ctx.report("", f"two data entries share the label {s.label!r} (n={s.n}); give them distinct `label`s")
        seen.add((s.label, s.n))
    return tuple(out)


def _parse_entry(raw: Any, ctx: Ctx) -> list[DataSpec]:
    raw = ctx.require_mapping(raw)
    given = [s for s in _SOURCES if s in raw]
    if len(given) != 1:
        guess = next((did_you_mean(k, _SOURCES) for k in raw if did_you_mean(k, _SOURCES)), "") if not given else ""
        ctx.report("", f"name exactly one data source ({', '.join(_SOURCES)}); got {', '.join(given) or 'none'}{guess}")
        return []
    label = ctx.get(raw, "label", str, None)
    bounds = None
    if raw.get("lower") is not None or raw.get("upper") is not None:
        lo, hi = ctx.number(raw, "lower"), ctx.number(raw, "upper")
        if not lo < hi and not ctx.failed("lower", "upper"):
            ctx.report("upper", f"must be > lower ({format_value(lo)}), got {format_value(hi)}")
        bounds = (float(lo), float(hi))
    body = {k: v for k, v in raw.items() if k not in ("lower", "upper")}
    specs = _parse_generator(body, ctx, label) if given[0] == "generator" else _parse_real(body, ctx, label, given[0])
    return [replace(s, bounds=bounds) for s in specs] if not ctx.failed("") else []


def _parse_generator(raw: dict, ctx: Ctx, label: str | None) -> list[DataSpec]:
    name = ctx.choice(raw, "generator", (*GENERATORS, "mixture"))
    if ctx.failed("generator"):
        return []
    ns = ctx.grid(raw, "n", int, lo=1, hi=_MAX_N)
    if name == "mixture":
        ctx.reject_unknown(raw, ("generator", "label", "n", "components", "lower", "upper"))
        comps_raw = ctx.get(raw, "components", list)
        if not comps_raw and not ctx.failed("components"):
            ctx.report("components", "must list at least one component")
        comps = [_parse_component(c, ctx.at("components", j)) for j, c in enumerate(comps_raw)]
        if not comps or None in comps:
            return []
        return [DataSpec(label or "mixture", "generator", "mixture", (("components", tuple(comps)),), int(n)) for n in ns]
    g = GENERATORS[name]
    ctx.reject_unknown(raw, ("generator", "label", "n", *g.params, "lower", "upper"))
    axes = {k: ctx.grid(raw, k, float, d) for k, d in g.params.items()}
    varying = [k for k, v in axes.items() if len(v) > 1]
    out = []
    for combo in itertools.product(*axes.values()):
        p = dict(zip(axes, combo))
        if not _check_gen_params(ctx, name, p):
            return []
        lab = label or name
        if varying:
            lab += "(" + ", ".join(f"{k}={format_value(p[k])}" for k in varying) + ")"
        for n in ns:
            out.append(DataSpec(lab, "generator", name, tuple(sorted(p.items())), int(n)))
    return out


def _parse_real(raw: dict, ctx: Ctx, label: str | None, source: str) -> list[DataSpec]:
    ctx.reject_unknown(raw, (source, "column", "label", "sample", "n", "lower", "upper"))
    name = ctx.get(raw, source, str)
    column = ctx.get(raw, "column", str)
    sample = ctx.choice(raw, "sample", ("full", "bootstrap", "subsample"), "full")
    if ctx.failed(source, "column"):
        return []
    path = None
    if source == "dataset":
        x = _dataset_column(ctx, name, column)
        where = f"{name}.{column}"
    else:
        path, x = _csv_column(ctx, name, column)
        where = f"{Path(name).name}: column {column!r}"
    if x is None:
        return []
    if x.size == 0:
        ctx.report("column", f"{where} has no values (every row is empty or missing)")
        return []
    if not np.all(np.isfinite(x)):
        ctx.report("column", f"{where} contains {format_value(float(x[~np.isfinite(x)][0]))}; data must be finite")
        return []
    if sample == "full":
        if raw.get("n") is not None:
            ctx.report("n", "only with sample: bootstrap or subsample (sample: full uses the whole column)")
        n = None
    else:
        hi = x.size if sample == "subsample" else _MAX_N
        n = int(ctx.number(raw, "n", lo=1, hi=hi, integer=True))
    default_label = f"{name}.{column}" if source == "dataset" else f"{Path(name).stem}.{column}"
    return [DataSpec(label or default_label, source, name, (("column", column),), n, sample, path)]


def _dataset_column(ctx: Ctx, name: str, column: str) -> np.ndarray | None:
    avail = _statsmodels_datasets()
    if name not in avail:
        ctx.report("dataset", f"unknown statsmodels dataset {name!r}{did_you_mean(name, avail)}; accepted: {', '.join(avail)}")
        return None
    import importlib

    cols = [str(c) for c in importlib.import_module(f"statsmodels.datasets.{name}").load_pandas().data.columns]
    if column not in cols:
        ctx.report("column", f"{name} has no column {column!r}{did_you_mean(column, cols)}; columns: {', '.join(cols)}")
        return None
    try:
        return statsmodels_column(name, column)
    except (ValueError, TypeError):
        ctx.report("column", f"{name}.{column} is not numeric")
        return None


def _csv_column(ctx: Ctx, name: str, column: str) -> tuple[str | None, np.ndarray | None]:
    """Check the CSV file and column; (absolute path, values) or (None, None) after a mistake."""
    import pandas as pd

    p = Path(name)
    if not p.is_absolute() and ctx.base_dir is not None:
        p = ctx.base_dir / p
    if p.is_dir():
        ctx.report("csv", f"{p} is a directory, not a CSV file")
        return None, None
    if not p.is_file():
        ctx.report("csv", f"file not found: {p}")
        return None, None
    try:
        cols = [str(c) for c in pd.read_csv(p, nrows=0).columns]
    except pd.errors.EmptyDataError:
        ctx.report("csv", f"{p.name} is empty (a CSV file needs a header line naming its columns)")
        return None, None
    except UnicodeDecodeError:
        ctx.report("csv", f"{p.name} is not UTF-8 text; save it as UTF-8 CSV")
        return None, None
    except Exception as exc:  # broad: pandas' reader raises many types (ParserError, csv.Error, ...); each is this mistake
        ctx.report("csv", f"cannot read {p.name} as CSV: {str(exc).strip()}")
        return None, None
    if column not in cols:
        ctx.report("column", f"{p.name} has no column {column!r}{did_you_mean(column, cols)}; columns: {', '.join(cols)}")
        return None, None
    try:
        return str(p), csv_column(str(p), column)
    except UnicodeDecodeError:
        ctx.report("csv", f"{p.name} is not UTF-8 text; save it as UTF-8 CSV")
        return None, None
    except (ValueError, TypeError, pd.errors.ParserError) as exc:
        ctx.report("column", f"{p.name}: {str(exc).strip()}")
        return None, None


def describe_generators() -> str:
    """One line per generator: name, parameters with defaults, law."""
    lines = [f"{k}({', '.join(f'{p}={format_value(d)}' for p, d in g.params.items())}): {g.doc}" for k, g in GENERATORS.items()]
    lines.append("mixture(components=[{generator, weight, params...}, ...])")
    return "\n".join(lines)
