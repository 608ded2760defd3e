"""Configs: reading a YAML file, validating every field, the resolved :class:`Config`.

The public names of configs live here (``from dpharness.bench.config import load_config, Ctx``);
each module holds one job:

* :mod:`.load` -- :func:`load_config`, :class:`Config`, :func:`config_hash` (the common keys, the
  ``quick:`` tier, handing the rest to the experiment kind's ``parse``);
* :mod:`.validation` -- :class:`Ctx`, the path-aware, collecting field readers kinds parse with;
* :mod:`.values` -- :class:`ConfigError`, ``REQUIRED``, :func:`did_you_mean` and value coercion;
* :mod:`.yaml_io` -- :func:`read_yaml` (UTF-8 YAML, one mapping, no duplicate keys);
* :mod:`.data` -- the ``data:`` key: generators, statsmodels datasets and CSV columns.
"""

from dpharness.bench.config.load import Config, config_hash, load_config
from dpharness.bench.config.validation import COMMON_KEYS, Ctx
from dpharness.bench.config.values import REQUIRED, ConfigError, did_you_mean
from dpharness.bench.config.yaml_io import read_yaml

__all__ = [
    "ConfigError",
    "Ctx",
    "Config",
    "REQUIRED",
    "COMMON_KEYS",
    "did_you_mean",
    "read_yaml",
    "load_config",
    "config_hash",
]
