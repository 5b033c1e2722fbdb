"""What only the Supabase store has: row-level security, the outbox under faults, the two auth
modes, error messages, and the wire-shaped view. Real Postgres + pgvector behind the shim,
supabase-py unchanged."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sqlite3
import stat
import subprocess

import httpx
import numpy as np
import psycopg
import pytest

from parla.memory.errors import ChatNotFound, StoreError, StoreOffline, StoreRefused, TurnConflict
from parla.memory.store.protocol import CompactionCommit
from parla.memory.store.supabase.rows import parse_vector
from parla.memory.store.supabase.schema import SCHEMA_VERSION, apply_migrations, migrations, migrations_dir
from parla.memory.store.supabase.store import RetryPolicy, SupabaseChatStore
from parla.records.embedding import EmbeddedText
from parla.records.pins import Pin
from parla.records.summary import SummaryLevel
from parla.records.turn import MessageRange, WebSource
from tests.conftest import make_turns, signed_in_store
from tests.memory.store.test_contract import emb
from tests.peers.postgrest import ANON_KEY, SERVICE_KEY, TEMPORARY_FAULTS
from tests.peers.supabase_peer import supabase_cli

pytestmark = pytest.mark.tier("postgres")


def rest(peer, token: str) -> httpx.Client:
    return httpx.Client(
        base_url=f"{peer.url}/rest/v1", headers={"apikey": ANON_KEY, "Authorization": f"Bearer {token}"}
    )


async def two_users(peer, tmp_path) -> tuple[SupabaseChatStore, SupabaseChatStore]:
    return await signed_in_store(peer, tmp_path, "a@example.com"), await signed_in_store(peer, tmp_path, "b@x.org")


def token_of(store: SupabaseChatStore) -> str:
    return store._client.options.headers["Authorization"].removeprefix("Bearer ")


# -- row-level security -----------------------------------------------------------------------


async def test_a_user_cannot_reach_another_users_chats(supabase, tmp_path):
    a, b = await two_users(supabase, tmp_path)
    async with a, b:
        chat = (await b.create_chat(title="B's secret", turns=make_turns(4))).chat
        await b.set_summary_text(chat.id, emb("about b", 1), 0)
        await b.upsert_summary(chat.id, SummaryLevel.CHUNK, MessageRange(start=1, end=4), emb("b chunk", 2))
        # Through every RPC the store uses: not found, nothing listed, nothing matched.
        with pytest.raises(ChatNotFound):
            await a.get_chat(chat.id)
        with pytest.raises(ChatNotFound):
            await a.append_turns(chat.id, make_turns(1, start=10))
        with pytest.raises(ChatNotFound):
            await a.create_chat(chat_id=chat.id, turns=make_turns(1, start=20))  # forged id of B's chat
        with pytest.raises(ChatNotFound):
            await a.rename_chat(chat.id, "mine now")
        with pytest.raises(ChatNotFound):
            await a.delete_chat(chat.id)
        with pytest.raises(ChatNotFound):
            await a.commit_compaction(CompactionCommit(chat.id, 0, 2, "x", emb("x", 3)))
        assert await a.list_chats() == [] and await a.find_chats(chat.id) == []
        assert await a.list_summaries(chat.id) == []
        await a.create_chat(turns=make_turns(2))
        own = (await a.list_chats())[0]
        await a.set_summary_text(own.id, emb("about a", 5), 0)
        assert [m.chat_id for m in await a.search(emb("q", 1), 10)] == [own.id]  # B's identical vector unseen
        assert (await a.stats()).total_messages == 2
        # Table routes with A's JWT: reads see nothing of B, writes into B's chat fail.
        b_id = await user_id(b)
        with rest(supabase, token_of(a)) as http:
            for table in ("chats", "chat_turns", "chat_summaries", "chat_facts", "chat_pins", "chat_histories"):
                r = http.get(f"/{table}", params={"select": "*"})
                assert r.status_code == 200 and chat.id not in r.text and b_id not in r.text
            r = http.patch(
                "/chats",
                params={"id": f"eq.{chat.id}"},
                json={"title": "pwned"},
                headers={"Prefer": "return=representation"},
            )
            assert r.status_code == 200 and r.json() == []
            r = http.post("/chat_pins", json={"chat_id": chat.id, "content": "injected"})
            assert r.status_code in (403, 409), r.text  # RLS or the (chat, owner) foreign key
            r = http.delete("/chats", params={"id": f"eq.{chat.id}"}, headers={"Prefer": "return=representation"})
            assert r.json() == []
            # p_user_id is only for the service role
            r = http.post("/rpc/load_chat", json={"p_chat_id": chat.id, "p_user_id": b_id})
            assert r.status_code == 403 and "service role" in r.json()["message"]
        assert (await b.get_chat(chat.id)).title == "B's secret"
        assert (await b.get_chat(chat.id)).turn_count == 4


async def user_id(store: SupabaseChatStore) -> str:
    session = await store._client.auth.get_session()
    assert session is not None and session.user is not None
    return session.user.id


async def test_anon_sees_nothing_and_a_bad_token_is_refused(supabase, tmp_path):
    async with await signed_in_store(supabase, tmp_path) as store:
        chat = (await store.create_chat(turns=make_turns(2))).chat
    with rest(supabase, ANON_KEY) as http:
        for table in ("chats", "chat_turns", "chat_histories"):
            r = http.get(f"/{table}")
            assert r.status_code == 401 and r.json()["code"] == "42501"
        r = http.post("/rpc/load_chat", json={"p_chat_id": chat.id})
        assert r.status_code == 401
        r = http.post("/rpc/search_chats_semantic", json={"query_embedding": [0.1] * 8, "match_count": 5})
        assert r.status_code == 401
    with rest(supabase, "not-a-jwt") as http:
        r = http.get("/chats")
        assert r.status_code == 401 and r.json()["code"] == "PGRST301"


# -- the outbox under faults ------------------------------------------------------------------


async def test_an_outage_loses_no_turn_and_replay_stores_each_once(supabase, tmp_path):
    async with await signed_in_store(supabase, tmp_path) as store:
        store.retry = RetryPolicy(attempts=1, delay=0.05, max_delay=0.2)
        first = make_turns(2)
        chat = (await store.create_chat(turns=first)).chat
        supabase.shim.refuse()
        waiting = make_turns(6, start=2)
        # a look-up's answer waits with the pages it came from
        cited = [WebSource(title="meteo.it", uri="https://vertexaisearch.cloud.google.com/grounding-api-redirect/x")]
        waiting[1] = waiting[1].model_copy(update={"sources": cited})
        for turn in waiting[:3]:
            with pytest.raises(StoreOffline, match="outbox"):
                await store.append_turns(chat.id, [turn])
        supabase.shim.recover()
        supabase.shim.drop = "after"  # the server commits but the answer is lost
        with pytest.raises(StoreOffline):
            await store.append_turns(chat.id, waiting[3:5])
        assert (await store.outbox.depth())[0] == 4
        supabase.shim.recover()
        result = await store.append_turns(chat.id, waiting[5:])  # sends the queue first, in order
        assert [t.seq for t in result.turns] == [8]
        history = await store.load_history(chat.id)
        assert [t.id for t in history.full_history] == [t.id for t in first + waiting]
        assert [t.sources for t in history.full_history] == [[], [], [], cited, [], [], [], []]
        assert (await store.stats()).outbox_depth == 0


async def test_the_outbox_survives_a_restart_and_replays_at_start(supabase, tmp_path):
    store = await signed_in_store(supabase, tmp_path)
    async with store:
        chat = (await store.create_chat(turns=make_turns(1))).chat
        supabase.shim.drop = "before"
        with pytest.raises(StoreOffline):
            await store.append_turns(chat.id, make_turns(3, start=1))
        assert await store.outbox.depth() == (1, 0)
    supabase.shim.recover()
    again = await SupabaseChatStore.connect(
        supabase.url,
        supabase.anon_key,
        outbox_path=tmp_path / "outbox-ada@example.com.db",
        session_file=tmp_path / "session-ada@example.com.json",
    )
    async with again:
        for _ in range(100):  # the replay task runs at start
            if (await again.outbox.depth())[0] == 0:
                break
            await asyncio.sleep(0.02)
        assert (await again.get_chat(chat.id)).turn_count == 4


async def test_a_refused_entry_does_not_block_the_queue(supabase, tmp_path):
    async with await signed_in_store(supabase, tmp_path) as store:
        store.retry = RetryPolicy(attempts=1, delay=60.0, max_delay=60.0)  # the replay task will not get there first
        said = make_turns(1)
        keep = (await store.create_chat(turns=said)).chat
        other = (await store.create_chat(turns=make_turns(1, start=5))).chat
        supabase.shim.refuse()
        with pytest.raises(StoreOffline):  # a turn already stored in another chat: refused for good
            await store.append_turns(other.id, said)
        with pytest.raises(StoreOffline):
            await store.append_turns(keep.id, make_turns(1, start=1))
        supabase.shim.recover()
        assert await store.flush() == 1
        stats = await store.stats()
        assert (stats.outbox_depth, stats.outbox_failed) == (0, 1)  # kept, marked failed
        assert (await store.get_chat(keep.id)).turn_count == 2


@pytest.mark.parametrize("fault", TEMPORARY_FAULTS)
async def test_a_temporary_server_error_is_retried_not_failed(supabase, tmp_path, fault):
    async with await signed_in_store(supabase, tmp_path) as store:
        store.retry = RetryPolicy(attempts=3, delay=0.01, max_delay=0.05)
        chat = (await store.create_chat(turns=make_turns(2))).chat
        supabase.shim.faults.next("/rest/v1/rpc/append_turns", fault, times=2)
        turns = make_turns(2, start=2)
        result = await store.append_turns(chat.id, turns)  # the third try goes through
        assert [t.seq for t in result.turns] == [3, 4] and result.added == 2  # a lost answer too: its retry gets it
        assert supabase.shim.faults.injected[fault] == 2
        assert await store.outbox.depth() == (0, 0)
        history = await store.load_history(chat.id)
        assert [t.id for t in history.full_history[2:]] == [t.id for t in turns]


@pytest.mark.parametrize("fault", ["drop_after", "40P01", "503"])
async def test_a_chat_created_through_faults_is_created_once(supabase, tmp_path, fault):
    async with await signed_in_store(supabase, tmp_path) as store:
        store.retry = RetryPolicy(attempts=3, delay=0.01, max_delay=0.05)
        supabase.shim.faults.next("/rest/v1/rpc/create_chat", fault, times=2)
        turns = make_turns(3)
        chat = (await store.create_chat(title="through faults", turns=turns)).chat
        assert [c.id for c in await store.list_chats()] == [chat.id]
        assert [t.id for t in (await store.load_history(chat.id)).full_history] == [t.id for t in turns]


async def test_a_temporary_error_past_the_tries_waits_in_the_outbox_and_is_sent_later(supabase, tmp_path):
    async with await signed_in_store(supabase, tmp_path) as store:
        store.retry = RetryPolicy(attempts=2, delay=0.01, max_delay=0.05)
        chat = (await store.create_chat(turns=make_turns(1))).chat
        supabase.shim.faults.next("/rest/v1/rpc/append_turns", "PGRST003", times=4)
        turns = make_turns(2, start=1)
        with pytest.raises(StoreOffline, match="PGRST003"):
            await store.append_turns(chat.id, turns)
        assert (await store.outbox.depth()) == (1, 0)  # waiting, not failed
        for _ in range(200):  # the replay task sends it once the server answers again
            if (await store.outbox.depth())[0] == 0:
                break
            await asyncio.sleep(0.01)
        assert await store.outbox.depth() == (0, 0)
        assert (await store.get_chat(chat.id)).turn_count == 3


async def test_a_refused_own_write_is_kept_marked_failed_and_the_next_ones_go_on(supabase, tmp_path):
    async with await signed_in_store(supabase, tmp_path) as store:
        elsewhere = make_turns(1)
        other = (await store.create_chat(turns=elsewhere)).chat
        keep = (await store.create_chat(turns=make_turns(1, start=5))).chat
        refused = [*make_turns(1, start=1), *elsewhere]  # the second is stored in the other chat already
        with pytest.raises(TurnConflict):
            await store.append_turns(keep.id, refused)
        assert await store.outbox.depth() == (0, 1)  # the words are kept, with the reason
        with pytest.raises(TurnConflict):  # a caller trying the same write again: still one entry
            await store.append_turns(keep.id, refused)
        assert await store.outbox.depth() == (0, 1)
        with sqlite3.connect(tmp_path / "outbox-ada@example.com.db") as db:
            ((reason, payload),) = db.execute("SELECT failed, payload FROM outbox").fetchall()
        assert other.id in reason and len(json.loads(payload)["turns"]) == 2
        assert (await store.append_turns(keep.id, make_turns(1, start=6))).added == 1
        stats = await store.stats()
        assert (stats.outbox_depth, stats.outbox_failed) == (0, 1)


async def test_permission_denied_is_a_refusal_kept_with_its_reason(supabase, tmp_path):
    async with await signed_in_store(supabase, tmp_path) as store:
        chat = (await store.create_chat(turns=make_turns(1))).chat
        with psycopg.connect(supabase.dsn, autocommit=True) as conn:  # a grant lost in a migration
            signature = conn.execute(
                "SELECT oid::regprocedure::text FROM pg_proc WHERE proname = 'append_turns'"
            ).fetchone()[0]
            conn.execute(f"REVOKE EXECUTE ON FUNCTION {signature} FROM authenticated, PUBLIC")
        with pytest.raises(StoreRefused, match="denied"):
            await store.append_turns(chat.id, make_turns(1, start=1))
        assert await store.outbox.depth() == (0, 1)
        with psycopg.connect(supabase.dsn, autocommit=True) as conn:
            conn.execute(f"GRANT EXECUTE ON FUNCTION {signature} TO authenticated")
        assert (await store.append_turns(chat.id, make_turns(1, start=2))).turns[0].seq == 2


async def test_a_refusal_by_the_gateway_is_for_good_and_kept(supabase, tmp_path):
    async with await signed_in_store(supabase, tmp_path) as store:
        store.retry = RetryPolicy(attempts=3, delay=0.01, max_delay=0.05)
        chat = (await store.create_chat(turns=make_turns(1))).chat
        supabase.shim.faults.next("/rest/v1/rpc/append_turns", "413")
        with pytest.raises(StoreRefused, match="413"):
            await store.append_turns(chat.id, make_turns(1, start=1))
        assert supabase.shim.faults.injected["413"] == 1  # not tried again
        assert await store.outbox.depth() == (0, 1)
        assert (await store.append_turns(chat.id, make_turns(1, start=2))).turns[0].seq == 2


async def test_appends_under_faults_store_every_turn_once_in_order(supabase, tmp_path):
    """The fast fault run: a third of the requests meet a fault of every kind; bench/outbox_faults.py
    runs the long one."""
    async with await signed_in_store(supabase, tmp_path) as store:
        store.retry = RetryPolicy(attempts=3, delay=0.005, max_delay=0.02)
        chat = (await store.create_chat(turns=make_turns(1))).chat
        supabase.shim.faults.random(0.35, path="/rest/v1/rpc/append_turns", seed=7)
        turns = make_turns(60, start=1)
        for i in range(0, len(turns), 2):
            try:
                await store.append_turns(chat.id, turns[i : i + 2])
            except StoreOffline:
                pass  # safe in the outbox, sent before the next append
        supabase.shim.faults.clear()
        await store.flush()
        history = await store.load_history(chat.id)
        assert await store.outbox.depth() == (0, 0)
    assert set(supabase.shim.faults.injected) == set(TEMPORARY_FAULTS)
    assert [t.id for t in history.full_history[1:]] == [t.id for t in turns]
    assert [t.seq for t in history.full_history] == list(range(1, 62))


async def test_two_clients_appending_while_a_compaction_commits_lose_nothing(supabase, tmp_path):
    one = await signed_in_store(supabase, tmp_path)
    session = tmp_path / "session-ada@example.com.json"
    two = await SupabaseChatStore.connect(
        supabase.url, supabase.anon_key, outbox_path=tmp_path / "second-device.db", session_file=session
    )
    async with one, two:
        first = make_turns(20)
        chat = (await one.create_chat(turns=first)).chat
        left, right = make_turns(15, start=20, prefix="L"), make_turns(15, start=20, prefix="R")

        async def feed(store, turns):
            for t in turns:
                await store.append_turns(chat.id, [t])

        async def compact():
            await asyncio.sleep(0.05)
            return await one.commit_compaction(CompactionCommit(chat.id, 0, 12, "summary", emb("summary", 1)))

        *_, committed = await asyncio.gather(feed(one, left), feed(two, right), compact())
        history = await two.load_history(chat.id)
    assert committed is not None and committed.summarized_through == 12
    ids = [t.id for t in history.full_history]
    assert sorted(ids) == sorted(t.id for t in first + left + right) and len(set(ids)) == 50
    assert [t.seq for t in history.full_history] == list(range(1, 51))
    assert [t.id for t in history.full_history if t.text.startswith("L")] == [t.id for t in left]
    assert history.assistant_history[1:] == history.tail and history.tail[0].seq == 13


# -- auth modes and messages ------------------------------------------------------------------


async def test_session_file_is_private_and_a_refresh_rotates_it(supabase, tmp_path):
    async with await signed_in_store(supabase, tmp_path) as store:
        path = tmp_path / "session-ada@example.com.json"
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
        before = json.loads(path.read_text())
        await store._client.auth.refresh_session()
        after = json.loads(path.read_text())
        assert before != after and stat.S_IMODE(os.stat(path).st_mode) == 0o600
        assert (await store.create_chat(turns=make_turns(1))).added == 1  # the new token works
    # the old refresh token was revoked by the rotation
    old = json.loads(next(iter(before.values())))["refresh_token"]
    async with httpx.AsyncClient() as http:
        r = await http.post(
            f"{supabase.url}/auth/v1/token?grant_type=refresh_token",
            json={"refresh_token": old},
            headers={"apikey": ANON_KEY},
        )
    assert r.status_code == 400


async def test_without_a_session_or_with_a_wrong_password_the_message_says_login(supabase, tmp_path):
    from parla.memory.store.supabase.session import sign_in

    with pytest.raises(StoreError, match="parla login"):
        await SupabaseChatStore.connect(
            supabase.url, ANON_KEY, outbox_path=tmp_path / "o.db", session_file=tmp_path / "none.json"
        )
    supabase.shim.create_user("c@example.com", "right")
    with pytest.raises(StoreError, match="Invalid login credentials"):
        await sign_in(supabase.url, ANON_KEY, "c@example.com", "wrong", tmp_path / "s.json")
    assert not (tmp_path / "s.json").exists()


async def test_service_role_mode_acts_for_the_named_user_only(supabase, tmp_path):
    alice = supabase.shim.create_user("alice@example.com")
    bob = supabase.shim.create_user("bob@example.com")
    mk = lambda uid, name: SupabaseChatStore.connect(
        supabase.url, SERVICE_KEY, user_id=uid, outbox_path=tmp_path / f"{name}.db"
    )
    async with await mk(alice, "a") as a, await mk(bob, "b") as b:
        chat = (await a.create_chat(title="Alice's", turns=make_turns(3))).chat
        await a.set_summary_text(chat.id, emb("alice", 1), 0)
        await a.add_pin(Pin(chat_id=chat.id, content="likes tea"))
        assert await b.list_chats() == [] and await b.list_pins(chat.id) == []
        assert await b.search(emb("alice", 1), 5) == []
        with pytest.raises(ChatNotFound):
            await b.append_turns(chat.id, make_turns(1, start=9))
        assert [c.id for c in await a.list_chats()] == [chat.id]
    with pytest.raises(StoreError, match="service-role key"):
        await SupabaseChatStore.connect(supabase.url, ANON_KEY, user_id=alice, outbox_path=tmp_path / "x.db")


async def test_a_missing_migration_says_what_to_apply(supabase, tmp_path):
    async with await signed_in_store(supabase, tmp_path) as store:
        with psycopg.connect(supabase.dsn, autocommit=True) as conn:
            conn.execute("DROP FUNCTION public.search_chats_semantic")
        with pytest.raises(StoreError, match="parla db migrate"):
            await store.search(emb("q", 1), 5)
        assert await store.schema_version() == SCHEMA_VERSION


async def test_wire_shaped_view_vectors_as_strings_and_realtime(supabase, tmp_path):
    async with await signed_in_store(supabase, tmp_path) as store:
        chat = (await store.create_chat(turns=make_turns(6))).chat
        await store.commit_compaction(CompactionCommit(chat.id, 0, 4, "the summary", emb("the summary", 7)))
        with rest(supabase, token_of(store)) as http:
            (row,) = http.get("/chat_histories", params={"id": f"eq.{chat.id}"}).json()
            (desc,) = http.get("/chats", params={"select": "summary_embedding", "id": f"eq.{chat.id}"}).json()
    assert len(row["full_history"]) == 6 and set(row["full_history"][0]) == {"role", "parts"}
    assert row["assistant_history"][0] == {"role": "model", "parts": [{"text": "the summary"}]}
    assert len(row["assistant_history"]) == 3
    assert isinstance(desc["summary_embedding"], str)
    np.testing.assert_allclose(parse_vector(desc["summary_embedding"]), emb("x", 7).vector, rtol=1e-6)
    with psycopg.connect(supabase.dsn) as conn:
        published = {
            r[0]
            for r in conn.execute("SELECT tablename FROM pg_publication_tables WHERE pubname = 'supabase_realtime'")
        }
        no_rls = conn.execute(
            "SELECT relname FROM pg_class WHERE relnamespace = 'public'::regnamespace AND relkind = 'r' "
            "AND NOT relrowsecurity"
        ).fetchall()
    assert published == {"chats", "chat_summaries", "chat_facts"} and no_rls == []


async def test_reading_a_chat_after_an_outage_sends_the_queue_first(supabase, tmp_path):
    async with await signed_in_store(supabase, tmp_path) as store:
        store.retry = RetryPolicy(attempts=1, delay=60.0, max_delay=60.0)  # the replay task will not get there first
        chat = (await store.create_chat(turns=make_turns(1))).chat
        supabase.shim.refuse()
        queued = make_turns(2, start=1)
        for _ in range(3):  # a caller trying again while it is away: the turns are queued once
            with pytest.raises(StoreOffline):
                await store.append_turns(chat.id, queued)
        assert await store.outbox.depth() == (1, 0)
        with pytest.raises(StoreOffline, match="unreachable"):
            await store.load_history(chat.id)
        supabase.shim.recover()
        history = await store.load_history(chat.id)
        assert [t.id for t in history.full_history[1:]] == [t.id for t in queued]


# -- a hosted project's limits: roles, timeouts, read-only access, max-rows -------------------


def test_the_peer_runs_requests_as_a_hosted_project_does(supabase, tmp_path):
    with psycopg.connect(supabase.dsn, autocommit=True) as conn:
        owner = conn.execute(
            "SELECT r.rolname, r.rolsuper FROM pg_class c JOIN pg_roles r ON r.oid = c.relowner "
            "WHERE c.oid = 'public.chats'::regclass"
        ).fetchone()
        inherit = dict(
            conn.execute(
                "SELECT rolname, rolinherit FROM pg_roles "
                "WHERE rolname IN ('anon', 'authenticated', 'service_role', 'authenticator')"
            ).fetchall()
        )
        conn.execute(
            "CREATE FUNCTION public.probe() RETURNS jsonb LANGUAGE sql STABLE AS $$ SELECT jsonb_build_object("
            "'timeout', current_setting('statement_timeout'), 'read_only', current_setting('transaction_read_only'))"
            " $$;"
            "CREATE FUNCTION public.probe_volatile() RETURNS jsonb LANGUAGE sql VOLATILE AS $$ SELECT public.probe() $$;"
            "CREATE SEQUENCE public.counter_seq;"
            "CREATE FUNCTION public.bump() RETURNS bigint LANGUAGE sql VOLATILE AS $$ SELECT nextval('public.counter_seq') $$;"
            "CREATE FUNCTION public.stable_but_writes() RETURNS bigint LANGUAGE sql STABLE AS $$ SELECT public.bump() $$;"
            "CREATE VIEW public.counter AS SELECT public.bump() AS n;"
            "GRANT ALL ON ALL FUNCTIONS IN SCHEMA public TO anon, authenticated, service_role;"
            "GRANT ALL ON public.counter_seq, public.counter TO anon, authenticated, service_role"
        )
    assert owner == ("postgres", False)  # migrations ran as the project's owner, not a superuser
    assert inherit == {"anon": True, "authenticated": True, "service_role": True, "authenticator": False}
    user = supabase.shim.create_user("probe@example.com")
    tokens = {"anon": ANON_KEY, "authenticated": supabase.shim.user_token(user), "service_role": SERVICE_KEY}
    timeouts = {}
    for role, token in tokens.items():
        with rest(supabase, token) as http:
            stable, volatile = http.post("/rpc/probe").json(), http.post("/rpc/probe_volatile").json()
            timeouts[role] = stable["timeout"]
            assert (stable["read_only"], volatile["read_only"]) == ("on", "off")
            refused = http.post("/rpc/stable_but_writes")
            assert refused.status_code == 405 and refused.json()["code"] == "25006"
            get = http.get("/counter")  # a GET is read-only too
            assert get.status_code == 405 and get.json()["code"] == "25006"
            assert http.post("/rpc/bump").status_code == 200
    assert timeouts == {"anon": "3s", "authenticated": "8s", "service_role": "8s"}


def test_the_peer_answers_at_most_max_rows(supabase):
    user = supabase.shim.create_user("rows@example.com")
    chat = _chat_with_rows(supabase, user, pins=1100, texts=600)
    with rest(supabase, supabase.shim.user_token(user)) as http:
        first = http.get("/chat_pins", params={"select": "id", "order": "id", "limit": "5000"})
        rest_of = http.get("/chat_pins", params={"select": "id", "order": "id", "offset": "1000"})
        texts = http.post("/rpc/embedded_texts", json={})
    assert len(first.json()) == 1000 and first.headers["content-range"] == "0-999/*"
    assert len(rest_of.json()) == 100 and rest_of.headers["content-range"] == "1000-1099/*"
    assert {r["id"] for r in first.json()}.isdisjoint(r["id"] for r in rest_of.json())
    assert len(texts.json()) == 1000 and chat


def _chat_with_rows(peer, user: str, *, pins: int = 0, texts: int = 0, chats: int = 0) -> str:
    """A chat of `user` with `pins` pins and `texts` chunk summaries and as many facts (8-dim
    vectors of embedder test-8), and `chats` more empty chats; written in SQL for speed."""
    with psycopg.connect(peer.dsn, autocommit=True) as conn:
        (chat,) = conn.execute(
            "INSERT INTO public.chats (user_id, title, turn_count) VALUES (%s, 'big', 2) RETURNING id", (user,)
        ).fetchone()
        conn.execute("INSERT INTO public.memory_embedders (user_id, embedder, dim) VALUES (%s, 'test-8', 8)", (user,))
        conn.execute(
            "INSERT INTO public.chat_pins (chat_id, user_id, content) "
            "SELECT %s, %s, 'pin ' || g FROM generate_series(1, %s) g",
            (chat, user, pins),
        )
        vector = "[" + ",".join(["0.35"] * 8) + "]"
        for table, columns, values in (
            ("chat_summaries", "level, summary", "0, 'chunk ' || g"),
            ("chat_facts", "facts", "'- fact ' || g"),
        ):
            conn.execute(
                f"INSERT INTO public.{table} (chat_id, user_id, start_seq, end_seq, embedding, embedder, {columns}) "
                f"SELECT %s, %s, g, g, %s::extensions.vector, 'test-8', {values} FROM generate_series(1, %s) g",
                (chat, user, vector, texts),
            )
        conn.execute(
            "INSERT INTO public.chats (user_id, title, last_activity_at) "
            "SELECT %s, 'chat ' || g, now() - g * interval '1 minute' FROM generate_series(1, %s) g",
            (user, chats),
        )
    return str(chat)


async def test_reads_of_more_than_max_rows_come_back_whole(supabase, tmp_path):
    async with await signed_in_store(supabase, tmp_path) as store:
        chat = _chat_with_rows(supabase, await user_id(store), pins=1100, texts=1100, chats=1100)
        assert len(await store.list_pins(chat)) == 1100
        assert len(await store.list_summaries(chat)) == 1100
        assert len(await store.list_facts(chat)) == 1100
        chats = await store.list_chats(limit=1500)
        assert len(chats) == 1101 and len({c.id for c in chats}) == 1101
        assert [c.id for c in await store.list_chats(limit=20, offset=1090)] == [c.id for c in chats[1090:1110]]
        # `parla memory reembed`: every embedded text is read, re-embedded and written back
        texts = await store.embedded_texts()
        assert len(texts) == len({t.ref for t in texts}) == 2200
        await store.replace_embeddings([(t.ref, emb(t.text, 3, dim=4).vector) for t in texts], "test-4")
        assert await store.embedder_info() == ("test-4", 4)


async def test_reembedding_a_large_store_stays_inside_the_statement_timeout(supabase, tmp_path):
    """Re-embedding stages and commits the vectors in pages: one request with all of them ran past
    the statement timeout, and so did one commit of them all once each updates an HNSW index (here
    3 s for this project, to keep the store small, so the pages are smaller than by default)."""
    with psycopg.connect(supabase.dsn, autocommit=True) as conn:
        name = conn.execute("SELECT current_database()").fetchone()[0]
        conn.execute(f"ALTER ROLE authenticated IN DATABASE {name} SET statement_timeout = '3s'")
    async with await signed_in_store(supabase, tmp_path) as store:
        chat = _chat_with_rows(supabase, await user_id(store), texts=600)
        texts = await store.embedded_texts()
        rng = np.random.default_rng(5)
        store.commit_page = 50
        supabase.shim.log.clear()
        await store.replace_embeddings([(t.ref, rng.normal(size=768)) for t in texts], "test-768")
        commits = [path for _, path, _ in supabase.shim.log if path.endswith("/rpc/commit_embeddings")]
        assert len(commits) == -(-len(texts) // 50)  # the call that writes the last page switches
        assert await store.embedder_info() == ("test-768", 768)
        found = await store.search(EmbeddedText("q", rng.normal(size=768), "test-768"), 5)
        assert [m.chat_id for m in found] == [chat]


async def test_a_long_chat_is_written_in_pages_each_turn_once(supabase, tmp_path):
    async with await signed_in_store(supabase, tmp_path) as store:
        turns = make_turns(1200)
        supabase.shim.log.clear()
        result = await store.create_chat(turns=turns)
        calls = [path.removeprefix("/rest/v1/rpc/") for _, path, _ in supabase.shim.log if "/rpc/" in path]
        assert calls == ["create_chat", "append_turns", "append_turns"]
        assert result.added == 1200 and [t.seq for t in result.turns] == list(range(1, 1201))
        assert result.chat.turn_count == 1200
        again = await store.append_turns(result.chat.id, turns[400:])  # a replay of pages: nothing twice
        assert again.added == 0 and [t.seq for t in again.turns] == list(range(401, 1201))
        history = await store.load_history(result.chat.id)
        assert [t.id for t in history.full_history] == [t.id for t in turns]
        middle = await store.load_turns(result.chat.id, 499, 1001)  # across two page boundaries
        assert [t.seq for t in middle] == list(range(499, 1002))


def test_one_append_of_8000_turns_stays_inside_the_statement_timeout(supabase):
    """The SQL itself is linear: one request of 8,000 turns (an old client's, or an import's)
    finishes within the authenticated role's 8 s."""
    user = supabase.shim.create_user("long@example.com")
    turns = [t.model_dump(mode="json", exclude={"seq"}) for t in make_turns(8000)]
    with rest(supabase, supabase.shim.user_token(user)) as http:
        http.timeout = 30
        r = http.post("/rpc/create_chat", json={"p_turns": turns})
    assert r.status_code == 200, r.text[:300]
    assert r.json()["added"] == 8000 and r.json()["turns"][-1] == {"id": turns[-1]["id"], "seq": 8000}


# -- the real Supabase CLI --------------------------------------------------------------------


def test_the_supabase_cli_applies_the_migrations_and_parla_agrees(pg_cluster, tmp_path):
    """`supabase db push` (the Supabase CLI from npm) applies supabase/migrations as the project's
    `postgres` role over TCP; `parla db migrate` and the CLI then see the same applied list."""
    cli = supabase_cli()
    if cli is None:
        pytest.skip("npm is not installed, so the Supabase CLI cannot be (scripts/test.sh installs both)")
    # a copy of the migrations folder: the CLI writes its state (supabase/.temp) next to them
    shutil.copytree(migrations_dir(), tmp_path / "supabase" / "migrations")

    def push(database: str) -> str:
        name = psycopg.conninfo.conninfo_to_dict(database)["dbname"]
        run = subprocess.run(
            [str(cli), "db", "push", f"--remote={pg_cluster.owner_dsn(name)}", "--yes", "--workdir", str(tmp_path)],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,  # the assertion shows the CLI's output
        )
        assert run.returncode == 0, run.stdout + run.stderr
        return run.stdout + run.stderr

    fresh = pg_cluster.new_database(migrated=False)
    pushed = push(fresh)
    for migration in migrations():
        assert f"Applying migration {migration.path.name}" in pushed
    name = psycopg.conninfo.conninfo_to_dict(fresh)["dbname"]
    assert apply_migrations(pg_cluster.owner_dsn(name)) == []  # parla db migrate: up to date
    with psycopg.connect(fresh) as conn:
        assert conn.execute("SELECT public.parla_schema_version()").fetchone() == (SCHEMA_VERSION,)
    # and a project migrated by Parla is up to date for the CLI
    assert "Applying migration" not in push(pg_cluster.new_database())
