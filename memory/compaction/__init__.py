"""Compaction: the rolling summary and verbatim tail, chunk summaries, facts and meta summaries,
pins and the profile read from a chat's turns (`compactor`), and the queue that summarises many
chats in the background at a bounded rate (`summary_queue`). Imports the store, the language
rules, retrieval's window index, summarizers and embedders through their protocols."""
