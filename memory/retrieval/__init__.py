"""Finding things in the user's chats: which chat a spoken request means (`search`), what was said
or kept about something (`recall`), the windows of raw turns that make what was said searchable
(`turn_windows`), and re-embedding every text for another embedder (`reembed`). Imports the
store's search index, the language rules and the embedders."""
