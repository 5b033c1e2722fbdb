"""The embedded store: one SQLite file in WAL mode with the vector index beside it, the same
semantics as the Supabase store. `store.SQLiteChatStore` composes one module per concern (chats,
memory, search, profile, reminders, queue) over one connection."""
