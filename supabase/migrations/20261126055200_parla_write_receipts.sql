-- A retried turn write returns its first try's answer. A write whose answer was lost (a timeout
-- after the server committed it) is sent again by the client's outbox; the turns are idempotent by
-- id, so nothing is stored twice, but the retry found them stored and answered "0 added": an
-- import counted the chat "unchanged" instead of "imported".
--
-- Decisions:
-- * The usual cure, an idempotency key (the Idempotency-Key draft,
--   https://developer.mozilla.org/docs/Web/HTTP/Reference/Headers/Idempotency-Key): the client
--   sends a key per outbox entry (p_write_key), and the server keeps each key's result for a while
--   in public.write_receipts; a call with a key it holds returns that result and writes nothing. Without a key (an older client) the functions work as before.
-- * The key is looked up after the chat row is locked: a retry that arrives while its first try
--   still runs waits for it, then finds its receipt.
-- * A receipt is kept 7 days (the outbox retries a lost answer within seconds, or when the device
--   is back online); each keyed write drops the caller's older ones, so the table stays small.
-- * A receipt belongs to its chat and goes with it: a retry of a write whose chat was deleted
--   meanwhile (on another device) brings the chat back with its turns, not an answer about turns
--   deleted with it.
-- * Owned by the user under RLS like the chats.

create table public.write_receipts (
    user_id uuid not null default auth.uid() references auth.users (id) on delete cascade,
    key uuid not null,
    chat_id uuid not null references public.chats (id) on delete cascade,
    result jsonb not null,
    created_at timestamptz not null default now(),
    primary key (user_id, key)
);
create index write_receipts_age on public.write_receipts (user_id, created_at);
create index write_receipts_chat on public.write_receipts (chat_id);

alter table public.write_receipts enable row level security;
create policy write_receipts_owner on public.write_receipts for all to authenticated
    using (user_id = (select auth.uid())) with check (user_id = (select auth.uid()));
revoke all on public.write_receipts from anon;

-- parla.append once per key: the result of the key's first call, or a new append remembered under it.
create function parla.append_once(p_chat public.chats, p_turns jsonb, p_key uuid) returns jsonb
language plpgsql volatile security invoker set search_path = pg_catalog, public as $$
declare
    v_result jsonb;
begin
    if p_key is null then
        return parla.append(p_chat, p_turns);
    end if;
    select result into v_result from public.write_receipts
        where user_id = p_chat.user_id and key = p_key and chat_id = p_chat.id;
    if found then
        return v_result;
    end if;
    v_result := parla.append(p_chat, p_turns);
    delete from public.write_receipts where user_id = p_chat.user_id and created_at < now() - interval '7 days';
    insert into public.write_receipts (user_id, key, chat_id, result) values (p_chat.user_id, p_key, p_chat.id, v_result)
    on conflict (user_id, key) do update set chat_id = excluded.chat_id, result = excluded.result, created_at = now();
    return v_result;
end $$;

drop function public.create_chat(uuid, text, timestamptz, jsonb, uuid);
drop function public.append_turns(uuid, jsonb, uuid);

-- Creates a chat with its first turns; an existing id of the caller appends idempotently instead.
create function public.create_chat(
    p_chat_id uuid default null, p_title text default null, p_created_at timestamptz default null,
    p_turns jsonb default '[]'::jsonb, p_user_id uuid default null, p_write_key uuid default null
) returns jsonb
language plpgsql volatile security invoker set search_path = pg_catalog, public as $$
declare
    v_uid uuid := parla.owner_id(p_user_id);
    v_id uuid := coalesce(p_chat_id, gen_random_uuid());
    v_created timestamptz := coalesce(p_created_at, (p_turns->0->>'created_at')::timestamptz, now());
begin
    insert into public.chats (id, user_id, title, created_at, last_activity_at)
    values (v_id, v_uid, nullif(btrim(p_title), ''), v_created, v_created)
    on conflict (id) do nothing;
    return parla.append_once(parla.locked_chat(v_uid, v_id), p_turns, p_write_key);
end $$;

-- Appends turns atomically, idempotent by turn id; updates last_activity_at.
create function public.append_turns(
    p_chat_id uuid, p_turns jsonb, p_user_id uuid default null, p_write_key uuid default null
) returns jsonb
language plpgsql volatile security invoker set search_path = pg_catalog, public as $$
begin
    return parla.append_once(parla.locked_chat(parla.owner_id(p_user_id), p_chat_id), p_turns, p_write_key);
end $$;

revoke all on function public.create_chat, public.append_turns, parla.append_once from public, anon;
grant execute on function public.create_chat, public.append_turns, parla.append_once to authenticated, service_role;

create or replace function public.parla_schema_version() returns integer
language sql immutable as $$ select 18 $$;
