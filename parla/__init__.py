"""Parla, installed under one package so its parts cannot shadow, or be shadowed by, other distributions.

The repository keeps memory/, tools/, voice/, ui/ and daemon/ at its top; parla/ links them in.
"""
