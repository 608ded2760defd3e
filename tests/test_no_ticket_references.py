"""Code, configs and tests speak for themselves: no references to numbered tickets of a tracker users
never see (the word issue or ticket followed by a number); a comment says what the code does instead."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PATTERN = re.compile(r"\b(?:issue|ticket)s?\s?#?\d+\b|\bissue\d+\b", re.IGNORECASE)


def test_no_ticket_numbers_in_code_configs_or_docs():
    hits = []
    for folder in ("mechanisms", "verifiers", "bench", "dpharness", "configs", "tests", "docs"):
        for p in (ROOT / folder).rglob("*"):
            if p.suffix not in (".py", ".yaml", ".md") or p.name == Path(__file__).name:
                continue
            for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1):
                # a GitHub issue of another project, cited as a source, is a reference, not a ticket of ours
                if PATTERN.search(line) and "github.com" not in line and "#" not in line.split("issue")[-1][:3]:
                    hits.append(f"{p.relative_to(ROOT)}:{i}: {line.strip()[:80]}")
    assert not hits, "\n".join(hits)
