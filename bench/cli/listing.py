"""``dpharness list``: every registered mechanism with its parameters and privacy claim."""

from __future__ import annotations

import argparse

NAME = "list"
HELP = "list every registered mechanism with its parameters and privacy claim"
ORDER = 10


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """No arguments."""


def run(args: argparse.Namespace) -> int:
    """Print one description per registered mechanism (``mechanisms.describe``); exit 0."""
    from dpharness import mechanisms

    for name in mechanisms.available():
        print(mechanisms.describe(name))
    return 0
