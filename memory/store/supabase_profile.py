"""The Supabase store's profile of the user (memory.profile): the functions of the migration
`parla_user_profile`, each one request. The profile is read whole: a user's durable facts number
in the hundreds, well under one response's row limit."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from parla.memory.profile import ProfileEntry
from parla.memory.store.checks import profile_entry_not_found
from parla.memory.store.supabase_rows import is_uuid

# the store's `_rpc`: a function's name, what it does (for errors), its named arguments
Rpc = Callable[..., Awaitable[Any]]


async def save_profile(rpc: Rpc, entries: Sequence[ProfileEntry], edit: bool) -> list[ProfileEntry]:
    if not entries:
        return []
    payload = [e.model_dump(mode="json", exclude={"superseded_by", "superseded_at", "forgotten_at"}) for e in entries]
    rows = await rpc("save_profile", "save the profile", p_entries=payload, p_edit=edit)
    return [ProfileEntry.model_validate(r) for r in rows]


async def list_profile(rpc: Rpc, history: bool) -> list[ProfileEntry]:
    rows = await rpc("list_profile", "read the profile", p_history=history)
    return [ProfileEntry.model_validate(r) for r in rows]


async def set_profile_forgotten(rpc: Rpc, entry_id: str, forgotten: bool) -> ProfileEntry:
    if not is_uuid(entry_id):
        raise profile_entry_not_found(entry_id)
    row = await rpc(
        "set_profile_forgotten",
        "forget a profile entry" if forgotten else "restore a profile entry",
        p_id=entry_id,
        p_forgotten=forgotten,
    )
    return ProfileEntry.model_validate(row)
