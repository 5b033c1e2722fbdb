-- Chats waiting for their summaries (memory.compaction.summary_queue): an import stores the turns at once and
-- queues the summarising, which a rate-limited worker does in the background.
--
-- Decisions:
-- * The queue is a table owned by the user under RLS like the chats, so it survives restarts and
--   any of the user's devices can work it. A deleted chat leaves the queue with it.
-- * A worker takes the chat due first with a lease (not_before pushed past it), under FOR UPDATE
--   SKIP LOCKED: two workers never take the same chat, and a worker that dies leaves its chat due
--   again when the lease ends.
-- * A chat that could not be summarised yet (a rate limit, Gemini away) is due again later, with
--   the error kept; it never leaves the queue unsummarised.

create table public.summary_queue (
    chat_id uuid primary key references public.chats (id) on delete cascade,
    user_id uuid not null default auth.uid() references auth.users (id) on delete cascade,
    queued_at timestamptz not null,
    not_before timestamptz not null,
    attempts integer not null default 0,
    last_error text
);
create index summary_queue_due on public.summary_queue (user_id, not_before, queued_at);

alter table public.summary_queue enable row level security;
create policy summary_queue_owner on public.summary_queue for all to authenticated
    using (user_id = (select auth.uid())) with check (user_id = (select auth.uid()));
revoke all on public.summary_queue from anon;

-- Queue the caller's chats, in the order given, after those already waiting; a chat already
-- queued keeps its place, an id that is not the caller's chat is ignored.
create function public.queue_summaries(p_chat_ids uuid[], p_user_id uuid default null) returns void
language plpgsql volatile security invoker set search_path = pg_catalog, public as $$
declare
    v_uid uuid := parla.owner_id(p_user_id);
begin
    insert into public.summary_queue (chat_id, user_id, queued_at, not_before)
    select c.id, v_uid, clock_timestamp() + make_interval(secs => g.n * 1e-6), now()
    from unnest(p_chat_ids) with ordinality as g(id, n)
    join public.chats c on c.id = g.id and c.user_id = v_uid
    on conflict (chat_id) do nothing;
end $$;

-- The chat due first, leased for p_lease_s seconds; null when none is due.
create function public.take_summary(p_lease_s double precision, p_user_id uuid default null) returns uuid
language plpgsql volatile security invoker set search_path = pg_catalog, public as $$
declare
    v_uid uuid := parla.owner_id(p_user_id);
    v_id uuid;
begin
    update public.summary_queue q set not_before = now() + make_interval(secs => p_lease_s)
    where q.chat_id = (
        select s.chat_id from public.summary_queue s
        where s.user_id = v_uid and s.not_before <= now()
        order by s.queued_at, s.chat_id
        limit 1
        for update skip locked)
    returning q.chat_id into v_id;
    return v_id;
end $$;

-- Done (p_retry_in_s null: the chat leaves the queue), or due again in p_retry_in_s seconds.
create function public.settle_summary(
    p_chat_id uuid, p_retry_in_s double precision default null, p_error text default null,
    p_user_id uuid default null
) returns void
language plpgsql volatile security invoker set search_path = pg_catalog, public as $$
declare
    v_uid uuid := parla.owner_id(p_user_id);
begin
    if p_retry_in_s is null then
        delete from public.summary_queue where user_id = v_uid and chat_id = p_chat_id;
    else
        update public.summary_queue
        set not_before = now() + make_interval(secs => p_retry_in_s), attempts = attempts + 1,
            last_error = p_error
        where user_id = v_uid and chat_id = p_chat_id;
    end if;
end $$;

-- How many chats wait, when the next is due (seconds from now, null when none waits), and the
-- last error a postponed one met.
create function public.summary_queue_state(p_user_id uuid default null) returns jsonb
language plpgsql stable security invoker set search_path = pg_catalog, public as $$
declare
    v_uid uuid := parla.owner_id(p_user_id);
begin
    return (
        select jsonb_build_object(
            'waiting', count(*),
            -- greatest() skips a null: no waiting chat must stay null
            'next_due_in_s', case when count(*) > 0
                                  then greatest(0, extract(epoch from min(q.not_before) - now())) end,
            'last_error', (select e.last_error from public.summary_queue e
                           where e.user_id = v_uid and e.last_error is not null
                           order by e.not_before desc limit 1))
        from public.summary_queue q where q.user_id = v_uid);
end $$;

revoke all on function public.queue_summaries, public.take_summary, public.settle_summary,
    public.summary_queue_state from public, anon;
grant execute on function public.queue_summaries, public.take_summary, public.settle_summary,
    public.summary_queue_state to authenticated, service_role;

create or replace function public.parla_schema_version() returns integer
language sql immutable as $$ select 13 $$;
