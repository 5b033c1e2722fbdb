"""Where chats are kept: the protocol every store answers, one role per concern (`protocol`), the
checks both stores share (`checks`), the embedded SQLite store (`sqlite/`), the Supabase store
(`supabase/`), the outbox that holds a remote store's writes until they are acknowledged
(`outbox`), the remote store with this device's SQLite copy (`local_copy`) and the turns a store
did not take (`refused`). Imports `parla.kernel`, `parla.records` and the language rules."""
