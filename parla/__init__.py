"""Parla, installed under one package so its parts cannot shadow, or be shadowed by, other distributions.

It holds what every package shares (`parla.kernel`, `parla.records`); the top-level folders memory/,
tools/, voice/, ui/ and daemon/ are its sub-packages by the package-dir mapping in pyproject.toml.
"""
