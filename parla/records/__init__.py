"""The record types every package may import: turns and their message ranges, chats and their two
histories, summaries, facts, pins, profile entries, reminders, a store's figures, a chat search's
answer, embeddings with their text and each embedder's calibration, and what background work
reports. Data and its validation only; it imports nothing of Parla but `parla.kernel`."""
