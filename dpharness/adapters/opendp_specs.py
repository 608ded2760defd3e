"""OpenDP domains, metrics and measures written as text, for parameters a YAML file gives
(docs/adapters.md, "OpenDP: parameters as text"): ``input_domain: "vector_domain(atom_domain(T=float,
nan=False))"``, ``input_metric: "symmetric_distance()"``, ``output_measure: "max_divergence()"``.

The text is parsed (``ast``), never evaluated: only calls of OpenDP's own constructors of domains,
metrics and measures (:func:`allowed_names`) with literal arguments (numbers, strings, booleans,
None, tuples, lists, dicts) and the type names ``float``, ``int``, ``str``, ``bool`` are read. A
parameter that is text shaped like such a call but is anything else is a :class:`ValueError`
naming the parameter, instead of OpenDP's "expected AnyDomain instead of bytes".
"""

from __future__ import annotations

import ast
import re
from typing import Any

__all__ = ["allowed_names", "parse_spec", "resolve_params", "looks_like_spec"]

_CALL = re.compile(r"^\s*[A-Za-z_]\w*\s*\(.*\)\s*$", re.S)
_TYPES = {"float": float, "int": int, "str": str, "bool": bool}
#: The parameters whose text must be a spec (the others are only read when they look like one).
_TUPLE_PARAMS = ("d_out", "d_in", "bounds")
_SPEC_PARAMS = ("input_domain", "input_metric", "output_measure", "output_domain", "key_domain", "value_domain")


def allowed_names() -> dict[str, Any]:
    """OpenDP's constructors a spec may call: ``*_domain`` of ``opendp.domains``, ``*_distance``
    of ``opendp.metrics`` and the divergences and ``approximate`` of ``opendp.measures`` (the
    ``user_*`` ones, which take Python functions, are left out)."""
    import opendp.domains as D
    import opendp.measures as S
    import opendp.metrics as M

    out: dict[str, Any] = {}
    for mod, ends in ((D, ("_domain",)), (M, ("_distance",)), (S, ("_divergence", "approximate"))):
        for name in dir(mod):
            if name.startswith(("_", "user_")) or not name.endswith(ends):
                continue
            fn = getattr(mod, name)
            if callable(fn) and getattr(fn, "__module__", "").startswith("opendp"):
                out[name] = fn
    return out


def looks_like_spec(value: Any) -> bool:
    """Text shaped like a call, ``name(...)``."""
    return isinstance(value, str) and bool(_CALL.match(value))


def parse_spec(text: str, what: str = "the parameter") -> Any:
    """The OpenDP object ``text`` describes (a call of :func:`allowed_names` with literal
    arguments); :class:`ValueError` naming ``what`` for anything else."""
    names = allowed_names()
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        raise ValueError(f"{what}: {text!r} is not a spec of an OpenDP domain, metric or measure ({exc.msg})") from None

    def value(node: ast.AST) -> Any:
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, (ast.Tuple, ast.List)):
            items = [value(e) for e in node.elts]
            return tuple(items) if isinstance(node, ast.Tuple) else items
        if isinstance(node, ast.Dict):
            return {value(k): value(v) for k, v in zip(node.keys, node.values)}
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            v = value(node.operand)
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                return -v if isinstance(node.op, ast.USub) else v
        if isinstance(node, ast.Name) and node.id in _TYPES:
            return _TYPES[node.id]
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            fn = names.get(node.func.id)
            if fn is None:
                raise ValueError(f"{what}: {node.func.id!r} is not an OpenDP constructor of a domain, metric or "
                                 f"measure; accepted: {', '.join(sorted(names))}")
            return fn(*[value(a) for a in node.args], **{k.arg: value(k.value) for k in node.keywords if k.arg})
        raise ValueError(f"{what}: {ast.unparse(node)!r} in {text!r} is not a literal (numbers, strings, tuples, "
                         "lists, float/int/str/bool) nor a call of an OpenDP domain, metric or measure")

    return value(tree.body)


def resolve_params(params: dict) -> dict:
    """``params`` with every spec (text shaped like a call, and any text given as an
    ``input_domain``, ``input_metric`` or ``output_measure``) made the OpenDP object it names."""
    out = dict(params)
    for key, v in params.items():
        if key in _SPEC_PARAMS and isinstance(v, str) and not looks_like_spec(v):
            raise ValueError(f"params.{key}: {v!r} is text but not a spec of an OpenDP domain, metric or measure; "
                             "write it as a call, e.g. 'vector_domain(atom_domain(T=float, nan=False))', "
                             "'symmetric_distance()' or 'max_divergence()'")
        if key in _TUPLE_PARAMS and isinstance(v, list):  # YAML has no tuples; OpenDP's pairs must be tuples
            out[key] = tuple(v)
        elif key == "d_mids" and isinstance(v, list):
            out[key] = [tuple(x) if isinstance(x, list) else x for x in v]
        elif looks_like_spec(v) and (key in _SPEC_PARAMS or v.strip().split("(")[0].strip() in allowed_names()):
            out[key] = parse_spec(v, f"params.{key}")
    return out
