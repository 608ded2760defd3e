"""JSON Schemas of the machine-readable verdicts (``--json PATH``) and a minimal validator.

One schema per command, versioned in its ``schema`` field (``dpharness.<command>/<version>``):
``audit.json``, ``regress.json``, ``validate.json``, ``bench.json`` -- shipped as package data, so
a consumer can read them with :func:`load_schema` (or from the wheel). The validator implements
the subset of JSON Schema the files use: ``type`` (one name or a list), ``required``,
``properties``, ``items``, ``enum`` and ``const``; other keywords (``description``, ``$schema``,
``title``, ``additionalProperties``) are accepted and ignored, so the files stay valid for any
full validator too.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

__all__ = ["COMMANDS", "SCHEMA_IDS", "load_schema", "validate", "check"]

#: the commands with a ``--json`` verdict, and the ``schema`` value each writes
COMMANDS = ("audit", "regress", "validate", "bench")
SCHEMA_IDS = {c: f"dpharness.{c}/1" for c in COMMANDS}

_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,), "array": (list,), "string": (str,), "boolean": (bool,), "null": (type(None),),
    "integer": (int,), "number": (int, float),
}


@cache
def _load(command: str) -> str:
    if command not in COMMANDS:
        raise ValueError(f"no schema for {command!r}; schemas: {', '.join(COMMANDS)}")
    return resources.files(__name__).joinpath(f"{command}.json").read_text(encoding="utf-8")


def load_schema(command: str) -> dict[str, Any]:
    """The JSON Schema (a fresh dict) of ``dpharness <command> --json``."""
    return json.loads(_load(command))


def _is(value: Any, name: str) -> bool:
    if name in ("integer", "number") and isinstance(value, bool):
        return False
    if name == "integer" and isinstance(value, float):
        return value.is_integer()
    return isinstance(value, _TYPES[name])


def validate(instance: Any, schema: dict[str, Any], path: str = "$") -> list[str]:
    """Every mismatch of ``instance`` against ``schema`` (``[]`` = valid), each with its JSON path."""
    errors: list[str] = []
    types = schema.get("type")
    if types is not None:
        names = [types] if isinstance(types, str) else list(types)
        if not any(_is(instance, t) for t in names):
            return [f"{path}: expected {' or '.join(names)}, got {type(instance).__name__}"]
    if "const" in schema and instance != schema["const"]:
        errors.append(f"{path}: expected {schema['const']!r}, got {instance!r}")
    if "enum" in schema and instance not in schema["enum"]:
        errors.append(f"{path}: {instance!r} is not one of {schema['enum']!r}")
    if isinstance(instance, dict):
        for key in schema.get("required", ()):
            if key not in instance:
                errors.append(f"{path}: missing required key {key!r}")
        for key, sub in schema.get("properties", {}).items():
            if key in instance:
                errors += validate(instance[key], sub, f"{path}.{key}")
    if isinstance(instance, list) and "items" in schema:
        for i, item in enumerate(instance):
            errors += validate(item, schema["items"], f"{path}[{i}]")
    return errors


def check(doc: dict[str, Any], command: str) -> None:
    """Raise ``ValueError`` listing the mismatches when ``doc`` does not follow ``command``'s schema."""
    errors = validate(doc, load_schema(command))
    if errors:
        raise ValueError(f"{command} JSON does not follow {SCHEMA_IDS[command]}: " + "; ".join(errors[:10]))
