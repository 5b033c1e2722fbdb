"""The Supabase store's profile of the user (parla.records.profile): the functions of the migration
`parla_user_profile`, each one request. The profile is read whole: a user's durable facts number
in the hundreds, well under one response's row limit.

Its writes (add, edit, forget, restore; a save settles supersession on the server) are queued in
the outbox like the user's other writes and sent from there in order, so one made while Supabase
is away waits (`WriteQueued`) instead of being lost. Each is idempotent on replay: the entry's id
was chosen on this device, a save of an id already stored stores nothing twice, and a forget sets
a value."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from parla.records.profile import ProfileEntry

from ..checks import profile_entry_not_found
from ..outbox import OutboxEntry
from .replay import OutboxReplay
from .rows import is_uuid

# the store's `_rpc`: a function's name, what it does (for errors), its named arguments
Rpc = Callable[..., Awaitable[Any]]

PROFILE_WRITES = frozenset({"save_profile", "set_profile_forgotten"})


async def save_profile(replay: OutboxReplay, entries: Sequence[ProfileEntry], edit: bool) -> list[ProfileEntry]:
    if not entries:
        return []
    payload = [e.model_dump(mode="json", exclude={"superseded_by", "superseded_at", "forgotten_at"}) for e in entries]
    saved: list[ProfileEntry] = await replay.write_through("save_profile", "", {"p_entries": payload, "p_edit": edit})
    return saved


async def list_profile(rpc: Rpc, history: bool) -> list[ProfileEntry]:
    rows = await rpc("list_profile", "read the profile", p_history=history)
    return [ProfileEntry.model_validate(r) for r in rows]


async def set_profile_forgotten(replay: OutboxReplay, entry_id: str, forgotten: bool) -> ProfileEntry:
    if not is_uuid(entry_id):
        raise profile_entry_not_found(entry_id)
    entry: ProfileEntry = await replay.write_through(
        "set_profile_forgotten", "", {"p_id": entry_id, "p_forgotten": forgotten}
    )
    return entry


async def send(rpc: Rpc, entry: OutboxEntry) -> list[ProfileEntry] | ProfileEntry:
    """One queued profile write, sent; its result as the write's method returns it."""
    if entry.op == "save_profile":
        rows = await rpc("save_profile", "save the profile", **entry.payload)
        return [ProfileEntry.model_validate(r) for r in rows]
    forgetting = entry.payload["p_forgotten"]
    row = await rpc(
        "set_profile_forgotten",
        "forget a profile entry" if forgetting else "restore a profile entry",
        **entry.payload,
    )
    return ProfileEntry.model_validate(row)
