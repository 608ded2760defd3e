"""Reading a config file: UTF-8 YAML, one mapping, no key given twice.

PyYAML's SafeLoader keeps the last of two equal keys silently; the loader here refuses them.
Every way a file can fail to be read is one :class:`~bench.config.values.ConfigError` naming the file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from dpharness.bench.config.values import ConfigError, _show

__all__ = ["read_yaml"]


class _DuplicateKey(yaml.YAMLError):
    def __init__(self, key: Any, first: int, again: int):
        super().__init__(f"line {again}: duplicate key {key!r} (first set on line {first}); YAML would keep only "
                         f"the last value silently: remove one of them")


class _Loader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that refuses a key given twice in one mapping (PyYAML keeps the last)."""


def _construct_mapping(loader: _Loader, node: yaml.MappingNode, deep: bool = False) -> dict:
    first: dict[Any, int] = {}
    for key_node, _ in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":  # `<<: *anchor` entries may be overridden
            continue
        key = loader.construct_object(key_node, deep=True)
        try:
            line = first.setdefault(key, key_node.start_mark.line + 1)
        except TypeError:  # an unhashable key: SafeConstructor reports it below
            continue
        if line != key_node.start_mark.line + 1:
            raise _DuplicateKey(key, line, key_node.start_mark.line + 1)
    return yaml.SafeLoader.construct_mapping(loader, node, deep=deep)


_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


#: The largest config file read (bytes); larger ones are refused before parsing.
MAX_CONFIG_BYTES = 5 * 10**6


def read_yaml(path: str | Path) -> dict:
    """Read a config file: a UTF-8 YAML mapping without duplicate keys.

    Every way of failing is a one-line ConfigError naming the file: missing file, a directory,
    unreadable, not UTF-8 (with the line of the first bad byte), YAML syntax (line and column),
    a duplicate key (both lines), empty, or not a mapping at the top level.
    """
    p = Path(path)
    if p.is_dir():
        inside = sorted(q.name for q in p.glob("*.yaml"))[:5]
        hint = f" (it holds {', '.join(inside)}{', ...' if len(inside) == 5 else ''})" if inside else ""
        raise ConfigError(f"{path}: is a directory, not a config file; give one YAML file{hint}")
    try:
        size = p.stat().st_size
        if size > MAX_CONFIG_BYTES:  # parsing tens of MB of YAML takes minutes: refuse at once
            raise ConfigError(f"{path}: is {size / 1e6:.1f} MB; a config is at most {MAX_CONFIG_BYTES // 10**6} MB "
                              "(data belongs in a CSV file named with csv:, docs/configs.md)")
        data = p.read_bytes()
    except FileNotFoundError:
        raise ConfigError(f"{path}: file not found") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise ConfigError(f"{path}: not UTF-8 text (byte 0x{data[exc.start]:02x} on line {line}); "
                          f"save the config as UTF-8") from None
    try:
        raw = yaml.load(text, Loader=_Loader)
    except _DuplicateKey as exc:
        raise ConfigError(f"{path}: {exc}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        if isinstance(exc, yaml.constructor.ConstructorError):  # e.g. a !!python/object tag
            raise ConfigError(f"{path}: unsupported YAML: {where}{problem} (configs are plain YAML, without tags)") from None
        raise ConfigError(f"{path}: YAML syntax error: {where}{problem}") from None
    if raw is None:
        raise ConfigError(f"{path}: the file is empty (or only comments); a config is a mapping of keys "
                          f"(name, experiment, seed, ... and the kind's own keys, see docs/configs.md)")
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: the top level must be a mapping (key: value lines), got {_show(raw)}")
    return raw
