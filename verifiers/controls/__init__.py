"""Mechanisms with a known truth (the zoo of broken mechanisms and their twins, the peers' suites): the
verifier is tested on them, so they sit above its core and are loaded only when used."""
