"""The Supabase store over supabase-py: every atomic write a Postgres function called by RPC (the
SQL in supabase/migrations), row-level security per user, every write queued in the local
outbox first and replayed idempotently, sign-in and the session file, and the schema's
migrations."""
