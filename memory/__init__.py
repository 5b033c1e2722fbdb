"""Parla's memory: turns, chats, summaries, facts and pins; the stores that keep them;
compaction, context building, embedders, summarizers and chat search.

This package imports nothing from `tools`, `voice` or `daemon`.
"""
