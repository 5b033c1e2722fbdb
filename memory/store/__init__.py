"""Where chats are kept: the protocol every store answers, one role per concern (`protocol`), the
checks both stores share (`checks`), where every store's writes of turns come in and are scored
(`scoring`), the embedded SQLite store (`sqlite/`), the Supabase store (`supabase/`), the outbox
that holds a remote store's writes until they are acknowledged (`outbox`), the remote store with
this device's SQLite copy (`local_copy`, its paths in `copy_paths`) and the turns a store did not
take (`refused`). Imports `parla.kernel`, `parla.records` and the language rules; the daemon opens
a store by its name in its registry (daemon/stores.py)."""
