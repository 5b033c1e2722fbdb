"""Write keys on the Supabase store (the PostgREST shim over real Postgres): a turn write whose
answer was lost is sent again with its key, and the server answers with its first try's result,
so the turns it stored count as added. The receipts are the user's own, and pruned."""

from __future__ import annotations

import uuid

import httpx
import psycopg
import pytest

from parla.memory.store.supabase.store import RetryPolicy
from parla.records.pins import Pin
from tests.conftest import make_turns, signed_in_store
from tests.peers.postgrest import ANON_KEY

pytestmark = pytest.mark.tier("postgres")


def _rest(peer, token: str) -> httpx.Client:
    return httpx.Client(
        base_url=f"{peer.url}/rest/v1", headers={"apikey": ANON_KEY, "Authorization": f"Bearer {token}"}
    )


async def test_a_page_whose_answer_was_lost_still_counts_its_turns_added(supabase, tmp_path):
    async with await signed_in_store(supabase, tmp_path) as store:
        store.retry = RetryPolicy(attempts=2, delay=0.01, max_delay=0.05)
        supabase.shim.faults.next("/rest/v1/rpc/append_turns", "drop_after")  # the second page's answer
        supabase.shim.log.clear()
        result = await store.create_chat(turns=make_turns(1200))
        calls = [path.removeprefix("/rest/v1/rpc/") for _, path, _ in supabase.shim.log if "/rpc/" in path]
        # the retry sends every page again: the first two answered from their receipts, each its own
        assert calls == ["create_chat", "append_turns", "create_chat", "append_turns", "append_turns"]
        assert result.added == 1200 and [t.seq for t in result.turns] == list(range(1, 1201))
        assert (await store.get_chat(result.chat.id)).turn_count == 1200


def test_a_key_answers_with_its_first_result_for_its_user_only(supabase):
    a, b = supabase.shim.create_user("a@example.com"), supabase.shim.create_user("b@example.org")
    chat, key = str(uuid.uuid4()), str(uuid.uuid4())
    turns = [t.model_dump(mode="json", exclude={"seq"}) for t in make_turns(2)]
    body = {"p_chat_id": chat, "p_turns": turns, "p_write_key": key}
    with _rest(supabase, supabase.shim.user_token(a)) as http:
        first = http.post("/rpc/create_chat", json=body).json()
        again = http.post("/rpc/create_chat", json=body).json()
        unkeyed = http.post("/rpc/create_chat", json={**body, "p_write_key": None}).json()
        assert first["added"] == again["added"] == 2 and again == first
        assert unkeyed["added"] == 0  # without a key: idempotent by turn id, as before
        assert [r["key"] for r in http.get("/write_receipts", params={"select": "key"}).json()] == [key]
    with _rest(supabase, supabase.shim.user_token(b)) as http:
        assert http.get("/write_receipts").json() == []  # RLS: another user sees none of them
        mine = str(uuid.uuid4())
        other = http.post("/rpc/create_chat", json={**body, "p_chat_id": mine}).json()
        assert other["chat"]["id"] == mine and other["added"] == 2  # the same key: never A's answer


def test_a_receipt_goes_with_its_chat(supabase):
    """A retry of a write whose chat was deleted meanwhile (on another device) brings the chat back
    with its turns ("talk wins over delete"): the deleted chat's receipt must not answer it."""
    user = supabase.shim.create_user("a@example.com")
    chat, key = str(uuid.uuid4()), str(uuid.uuid4())
    turns = [t.model_dump(mode="json", exclude={"seq"}) for t in make_turns(2)]
    body = {"p_chat_id": chat, "p_turns": turns, "p_write_key": key}
    with _rest(supabase, supabase.shim.user_token(user)) as http:
        assert http.post("/rpc/create_chat", json=body).json()["added"] == 2
        assert http.post("/rpc/delete_chat", json={"p_chat_id": chat}).status_code in (200, 204)
        again = http.post("/rpc/create_chat", json=body).json()
        stored = http.post("/rpc/load_chat", json={"p_chat_id": chat}).json()
        assert again["added"] == 2 and [t["id"] for t in stored["turns"]] == [t["id"] for t in turns]


def test_receipts_older_than_a_week_are_dropped_by_the_next_keyed_write(supabase):
    user = supabase.shim.create_user("a@example.com")
    turns = [t.model_dump(mode="json", exclude={"seq"}) for t in make_turns(3)]
    with _rest(supabase, supabase.shim.user_token(user)) as http:
        for turn in turns[:2]:
            body = {"p_chat_id": str(uuid.uuid4()), "p_turns": [turn], "p_write_key": str(uuid.uuid4())}
            assert http.post("/rpc/create_chat", json=body).status_code == 200
        with psycopg.connect(supabase.dsn, autocommit=True) as conn:
            conn.execute(
                "UPDATE public.write_receipts SET created_at = now() - interval '8 days' "
                "WHERE key = (SELECT key FROM public.write_receipts ORDER BY created_at LIMIT 1)"
            )
        body = {"p_chat_id": str(uuid.uuid4()), "p_turns": [turns[2]], "p_write_key": str(uuid.uuid4())}
        assert http.post("/rpc/create_chat", json=body).status_code == 200
        with psycopg.connect(supabase.dsn) as conn:
            ages = conn.execute("SELECT now() - created_at < interval '1 day' FROM public.write_receipts").fetchall()
        assert ages == [(True,), (True,)]


async def test_a_delete_whose_answer_was_lost_is_not_told_it_was_not_found(supabase, tmp_path):
    """The retry of a delete the server had done finds nothing: that is the delete's own work, not a
    chat or pin the user named wrongly."""
    async with await signed_in_store(supabase, tmp_path) as store:
        store.retry = RetryPolicy(attempts=2, delay=0.01, max_delay=0.05)
        chat = (await store.create_chat(turns=make_turns(2))).chat
        pin = await store.add_pin(Pin(chat_id=chat.id, content="likes tea", importance=2))
        supabase.shim.faults.next("/rest/v1/chat_pins", "drop_after")
        await store.delete_pin(pin.id)
        assert await store.list_pins(chat.id) == []
        supabase.shim.faults.next("/rest/v1/rpc/delete_chat", "drop_after")
        await store.delete_chat(chat.id)
        assert chat.id not in [c.id for c in await store.list_chats()]
