-- Parla memory on Supabase: chats, turns, summaries, facts, pins, and the functions Parla calls
-- by RPC. Apply with `parla db migrate` (PARLA_SUPABASE_DB_URL), `supabase db push`, or paste this
-- file into the SQL editor. Every function is SECURITY INVOKER, so row-level security applies to
-- whoever calls it; each one also filters by the caller's user id itself.
--
-- Decisions:
-- * Turns live one row per turn in chat_turns, not in a jsonb column rewritten on every append:
--   an append then costs the same at turn 10 and turn 5,000. The seed's full_history and
--   assistant_history are served by the view chat_histories in the seed's shape.
-- * Vector columns have no fixed dimension: the dimension follows the embedder the user chose
--   (gemini-embedding-001 at 768, the offline embedder at 256). memory_embedders records it per
--   user and the functions refuse vectors of another embedder.
-- * No HNSW/IVFFlat index: a search is confined to one user's rows (RLS), which an approximate
--   index would post-filter with poor recall; an exact scan of one user's few thousand vectors,
--   found through the user_id indexes, takes milliseconds (see the README's bench figures).

create extension if not exists vector with schema extensions;
create schema if not exists parla;
grant usage on schema parla to authenticated, service_role;

-- Tables ------------------------------------------------------------------------------------

create table public.chats (
    id uuid primary key default gen_random_uuid(),
    user_id uuid not null default auth.uid() references auth.users (id) on delete cascade,
    title text check (title is null or btrim(title) <> ''),
    summary_text text not null default '',
    summary_embedding extensions.vector,
    summary_embedder text,
    rolling_summary text not null default '',
    summarized_through integer not null default 0,
    compaction_version integer not null default 0,
    turn_count integer not null default 0,
    last_activity_at timestamptz not null default now(),
    created_at timestamptz not null default now(),
    -- lets child rows reference (chat, owner) so no row can hang under another user's chat
    unique (id, user_id),
    check (summarized_through between 0 and turn_count),
    check ((summary_embedding is null) = (summary_embedder is null))
);
-- list_chats and every per-user scan
create index chats_user_activity on public.chats (user_id, last_activity_at desc);

create table public.chat_turns (
    chat_id uuid not null,
    user_id uuid not null default auth.uid(),
    seq integer not null check (seq >= 1),
    id text not null check (id <> ''),
    role text not null check (role in ('user', 'model')),
    parts jsonb not null check (jsonb_typeof(parts) = 'array'),
    thinking text,
    created_at timestamptz not null,
    interrupted boolean not null default false,
    source text not null default 'voice' check (source in ('voice', 'text', 'tool', 'import')),
    model_variant text,
    primary key (chat_id, seq),
    -- idempotent appends: a turn id is stored once per user
    unique (user_id, id),
    foreign key (chat_id, user_id) references public.chats (id, user_id) on delete cascade
);

create table public.chat_summaries (
    chat_id uuid not null,
    user_id uuid not null default auth.uid(),
    level smallint not null check (level in (0, 1)),
    start_seq integer not null,
    end_seq integer not null,
    summary text not null,
    embedding extensions.vector not null,
    embedder text not null,
    created_at timestamptz not null default now(),
    updated_at timestamptz not null default now(),
    primary key (chat_id, level, start_seq, end_seq),
    check (1 <= start_seq and start_seq <= end_seq),
    foreign key (chat_id, user_id) references public.chats (id, user_id) on delete cascade
);
-- search scans one user's rows
create index chat_summaries_user on public.chat_summaries (user_id);

create table public.chat_facts (
    id uuid primary key default gen_random_uuid(),
    chat_id uuid not null,
    user_id uuid not null default auth.uid(),
    start_seq integer not null,
    end_seq integer not null,
    facts text not null, -- plain "- fact" lines; '' when the range had none
    embedding extensions.vector,
    embedder text,
    created_at timestamptz not null default now(),
    updated_at timestamptz not null default now(),
    constraint chat_facts_unique_range unique (chat_id, start_seq, end_seq),
    check (1 <= start_seq and start_seq <= end_seq),
    check ((facts = '') = (embedding is null)),
    check ((embedding is null) = (embedder is null)),
    foreign key (chat_id, user_id) references public.chats (id, user_id) on delete cascade
);
create index chat_facts_user on public.chat_facts (user_id);

create table public.chat_pins (
    id uuid primary key default gen_random_uuid(),
    chat_id uuid not null,
    user_id uuid not null default auth.uid(),
    content text not null check (content <> ''),
    importance real not null default 5 check (importance between 0 and 10),
    pin_type text not null default 'manual' check (pin_type in ('manual', 'auto', 'code', 'concept', 'system')),
    source_turn_id text,
    created_at timestamptz not null default now(),
    foreign key (chat_id, user_id) references public.chats (id, user_id) on delete cascade
);
create index chat_pins_chat on public.chat_pins (chat_id);

create table public.memory_embedders (
    user_id uuid primary key default auth.uid() references auth.users (id) on delete cascade,
    embedder text not null,
    dim integer not null check (dim > 0)
);

-- Row-level security: a row is visible and writable only by its owner ------------------------

alter table public.chats enable row level security;
alter table public.chat_turns enable row level security;
alter table public.chat_summaries enable row level security;
alter table public.chat_facts enable row level security;
alter table public.chat_pins enable row level security;
alter table public.memory_embedders enable row level security;

create policy chats_owner on public.chats for all to authenticated
    using (user_id = (select auth.uid())) with check (user_id = (select auth.uid()));
create policy chat_turns_owner on public.chat_turns for all to authenticated
    using (user_id = (select auth.uid())) with check (user_id = (select auth.uid()));
create policy chat_summaries_owner on public.chat_summaries for all to authenticated
    using (user_id = (select auth.uid())) with check (user_id = (select auth.uid()));
create policy chat_facts_owner on public.chat_facts for all to authenticated
    using (user_id = (select auth.uid())) with check (user_id = (select auth.uid()));
create policy chat_pins_owner on public.chat_pins for all to authenticated
    using (user_id = (select auth.uid())) with check (user_id = (select auth.uid()));
create policy memory_embedders_owner on public.memory_embedders for all to authenticated
    using (user_id = (select auth.uid())) with check (user_id = (select auth.uid()));

revoke all on public.chats, public.chat_turns, public.chat_summaries, public.chat_facts, public.chat_pins,
    public.memory_embedders from anon;

-- The seed's shape: full_history and assistant_history as jsonb arrays of turns.
create view public.chat_histories with (security_invoker = true) as
select
    c.id,
    c.user_id,
    coalesce(h.full_history, '[]'::jsonb) as full_history,
    (case when c.rolling_summary = '' then '[]'::jsonb
          else jsonb_build_array(jsonb_build_object(
              'role', 'model', 'parts', jsonb_build_array(jsonb_build_object('text', c.rolling_summary))))
     end) || coalesce(h.tail, '[]'::jsonb) as assistant_history
from public.chats c
left join lateral (
    -- one scan of the chat's turns: all of them, and the unsummarised tail
    select jsonb_agg(t.seed order by t.seq) as full_history,
           jsonb_agg(t.seed order by t.seq) filter (where t.seq > c.summarized_through) as tail
    from (select seq, jsonb_strip_nulls(jsonb_build_object('role', role, 'parts', parts, 'thinking', thinking)) as seed
          from public.chat_turns where chat_id = c.id) t
) h on true;
revoke all on public.chat_histories from anon;

-- Realtime: the UI hears chats, summaries and facts change.
do $$
begin
    if exists (select 1 from pg_publication where pubname = 'supabase_realtime') then
        alter publication supabase_realtime add table public.chats, public.chat_summaries, public.chat_facts;
    end if;
end $$;
alter table public.chats replica identity full;
alter table public.chat_summaries replica identity full;
alter table public.chat_facts replica identity full;

-- Helpers (schema parla is not exposed over the API) -----------------------------------------

-- Errors carry a machine-readable kind in DETAIL: chat_not_found, turn_conflict, embedder_mismatch,
-- bad_input. The Python adapter turns each into its own exception.

create function parla.owner_id(p_user_id uuid) returns uuid
language plpgsql stable security invoker set search_path = pg_catalog, public as $$
declare
    v_uid uuid := auth.uid();
begin
    if v_uid is not null then
        if p_user_id is not null and p_user_id <> v_uid then
            raise exception 'p_user_id may only be given with the service role key'
                using errcode = '42501', detail = 'forbidden';
        end if;
        return v_uid;
    end if;
    -- the service role (RLS bypassed) acts for the user id it names
    if p_user_id is not null and (select rolbypassrls from pg_roles where rolname = current_user) then
        return p_user_id;
    end if;
    raise exception 'not signed in'
        using errcode = '42501', detail = 'not_signed_in',
              hint = 'run `parla login`, or set PARLA_SUPABASE_SERVICE_KEY with PARLA_SUPABASE_USER_ID';
end $$;

create function parla.locked_chat(p_uid uuid, p_chat_id uuid) returns public.chats
language plpgsql volatile security invoker set search_path = pg_catalog, public as $$
declare
    v_chat public.chats;
begin
    select * into v_chat from public.chats where id = p_chat_id and user_id = p_uid for update;
    if not found then
        raise exception 'no chat %', p_chat_id using errcode = 'P0001', detail = 'chat_not_found';
    end if;
    return v_chat;
end $$;

create function parla.chat_json(p_chat public.chats) returns jsonb
language sql immutable set search_path = pg_catalog, public as $$
    select to_jsonb(p_chat) - 'summary_embedding' - 'summary_embedder'
$$;

create function parla.turn_json(p_turn public.chat_turns) returns jsonb
language sql immutable set search_path = pg_catalog, public as $$
    select to_jsonb(p_turn) - 'user_id' - 'chat_id'
$$;

-- Accepts the embedder of a vector about to be written, or refuses it.
create function parla.check_embedder(p_uid uuid, p_embedder text, p_vector extensions.vector) returns void
language plpgsql volatile security invoker set search_path = pg_catalog, public, extensions as $$
declare
    v_known public.memory_embedders;
    v_dim integer := extensions.vector_dims(p_vector);
begin
    if p_embedder is null or p_embedder = '' then
        raise exception 'a vector needs the name of its embedder' using errcode = 'P0001', detail = 'bad_input';
    end if;
    select * into v_known from public.memory_embedders where user_id = p_uid for update;
    if found and v_known.embedder = p_embedder and v_known.dim = v_dim then
        return;
    end if;
    if found and parla.vector_count(p_uid) > 0 then
        raise exception 'this store''s vectors were made by % (% dims) but the embedder now is % (% dims)',
            v_known.embedder, v_known.dim, p_embedder, v_dim
            using errcode = 'P0001', detail = 'embedder_mismatch',
                  hint = 'run `parla memory reembed` to rebuild them, or set PARLA_EMBEDDER back';
    end if;
    insert into public.memory_embedders (user_id, embedder, dim) values (p_uid, p_embedder, v_dim)
    on conflict (user_id) do update set embedder = excluded.embedder, dim = excluded.dim;
end $$;

create function parla.vector_count(p_uid uuid) returns bigint
language sql stable security invoker set search_path = pg_catalog, public as $$
    select (select count(*) from public.chats where user_id = p_uid and summary_embedding is not null)
         + (select count(*) from public.chat_summaries where user_id = p_uid)
         + (select count(*) from public.chat_facts where user_id = p_uid and embedding is not null)
$$;

create function parla.append(p_chat public.chats, p_turns jsonb) returns jsonb
language plpgsql volatile security invoker set search_path = pg_catalog, public as $$
declare
    v_turn jsonb;
    v_known record;
    v_seq integer := p_chat.turn_count;
    v_added integer := 0;
    v_latest timestamptz;
    v_created timestamptz;
    v_out jsonb := '[]'::jsonb;
begin
    if p_turns is null or jsonb_typeof(p_turns) <> 'array' then
        raise exception 'turns must be a JSON array' using errcode = 'P0001', detail = 'bad_input';
    end if;
    if (select count(distinct t->>'id') from jsonb_array_elements(p_turns) t) <> jsonb_array_length(p_turns) then
        raise exception 'the same turn id appears twice in one append' using errcode = 'P0001', detail = 'bad_input';
    end if;
    for v_turn in select value from jsonb_array_elements(p_turns) loop
        if jsonb_typeof(v_turn) <> 'object' or coalesce(v_turn->>'id', '') = ''
           or jsonb_typeof(v_turn->'parts') is distinct from 'array' then
            raise exception 'each turn needs an id, a role and parts: %', left(v_turn::text, 200)
                using errcode = 'P0001', detail = 'bad_input';
        end if;
        select chat_id, seq into v_known from public.chat_turns
            where user_id = p_chat.user_id and id = v_turn->>'id';
        if found then
            if v_known.chat_id <> p_chat.id then
                raise exception 'turn % is already stored in chat %', v_turn->>'id', v_known.chat_id
                    using errcode = 'P0001', detail = 'turn_conflict';
            end if;
            v_out := v_out || jsonb_build_object('id', v_turn->>'id', 'seq', v_known.seq);
            continue;
        end if;
        v_seq := v_seq + 1;
        v_created := coalesce((v_turn->>'created_at')::timestamptz, now());
        v_latest := greatest(v_latest, v_created);
        insert into public.chat_turns
            (chat_id, user_id, seq, id, role, parts, thinking, created_at, interrupted, source, model_variant)
        values (p_chat.id, p_chat.user_id, v_seq, v_turn->>'id', v_turn->>'role', v_turn->'parts',
                v_turn->>'thinking', v_created, coalesce((v_turn->>'interrupted')::boolean, false),
                coalesce(v_turn->>'source', 'voice'), v_turn->>'model_variant');
        v_added := v_added + 1;
        v_out := v_out || jsonb_build_object('id', v_turn->>'id', 'seq', v_seq);
    end loop;
    if v_added > 0 then
        update public.chats set turn_count = v_seq, last_activity_at = greatest(last_activity_at, v_latest)
            where id = p_chat.id returning * into p_chat;
    end if;
    return jsonb_build_object('chat', parla.chat_json(p_chat), 'turns', v_out, 'added', v_added);
end $$;

-- RPC functions ------------------------------------------------------------------------------

-- Creates a chat with its first turns; an existing id of the caller appends idempotently instead.
create function public.create_chat(
    p_chat_id uuid default null, p_title text default null, p_created_at timestamptz default null,
    p_turns jsonb default '[]'::jsonb, p_user_id uuid default null
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
    return parla.append(parla.locked_chat(v_uid, v_id), p_turns);
end $$;

-- Appends turns atomically, idempotent by turn id; updates last_activity_at.
create function public.append_turns(p_chat_id uuid, p_turns jsonb, p_user_id uuid default null) returns jsonb
language plpgsql volatile security invoker set search_path = pg_catalog, public as $$
begin
    return parla.append(parla.locked_chat(parla.owner_id(p_user_id), p_chat_id), p_turns);
end $$;

-- A chat and its turns from p_from_seq to p_to_seq (all by default), read in one snapshot.
create function public.load_chat(
    p_chat_id uuid, p_from_seq integer default 1, p_to_seq integer default null, p_user_id uuid default null
) returns jsonb
language plpgsql stable security invoker set search_path = pg_catalog, public as $$
declare
    v_uid uuid := parla.owner_id(p_user_id);
    v_chat public.chats;
begin
    select * into v_chat from public.chats where id = p_chat_id and user_id = v_uid;
    if not found then
        raise exception 'no chat %', p_chat_id using errcode = 'P0001', detail = 'chat_not_found';
    end if;
    return jsonb_build_object(
        'chat', parla.chat_json(v_chat),
        'turns', coalesce((
            select jsonb_agg(parla.turn_json(t) order by t.seq) from public.chat_turns t
            where t.chat_id = p_chat_id and t.seq >= p_from_seq and (p_to_seq is null or t.seq <= p_to_seq)
        ), '[]'::jsonb));
end $$;

-- Chats whose id is p_ref, starts with it (4+ characters), or whose title is it (any case).
create function public.find_chats(p_ref text, p_user_id uuid default null) returns jsonb
language plpgsql stable security invoker set search_path = pg_catalog, public as $$
declare
    v_uid uuid := parla.owner_id(p_user_id);
    v_ref text := btrim(coalesce(p_ref, ''));
begin
    if v_ref = '' then
        return '[]'::jsonb;
    end if;
    return coalesce((
        select jsonb_agg(parla.chat_json(c) order by c.last_activity_at desc)
        from public.chats c
        where c.user_id = v_uid
          and (c.id::text = lower(v_ref)
               or (length(v_ref) >= 4 and c.id::text like replace(replace(lower(v_ref), '%', ''), '_', '') || '%')
               or lower(c.title) = lower(v_ref))
    ), '[]'::jsonb);
end $$;

create function public.rename_chat(p_chat_id uuid, p_title text, p_user_id uuid default null) returns jsonb
language plpgsql volatile security invoker set search_path = pg_catalog, public as $$
declare
    v_chat public.chats := parla.locked_chat(parla.owner_id(p_user_id), p_chat_id);
begin
    if btrim(coalesce(p_title, '')) = '' then
        raise exception 'a chat title cannot be empty' using errcode = 'P0001', detail = 'bad_input';
    end if;
    update public.chats set title = btrim(p_title) where id = v_chat.id returning * into v_chat;
    return parla.chat_json(v_chat);
end $$;

create function public.delete_chat(p_chat_id uuid, p_user_id uuid default null) returns void
language plpgsql volatile security invoker set search_path = pg_catalog, public as $$
declare
    v_chat public.chats := parla.locked_chat(parla.owner_id(p_user_id), p_chat_id);
begin
    delete from public.chats where id = v_chat.id;
end $$;

-- Commits a compaction only if no other compaction committed since it read (compaction_version);
-- turns appended meanwhile have higher seqs and stay in the tail. Returns the chat, or null.
create function public.commit_compaction(
    p_chat_id uuid, p_expected_version integer, p_summarized_through integer, p_rolling_summary text,
    p_summary_text text, p_summary_embedding extensions.vector, p_embedder text, p_title text default null,
    p_user_id uuid default null
) returns jsonb
language plpgsql volatile security invoker set search_path = pg_catalog, public as $$
declare
    v_uid uuid := parla.owner_id(p_user_id);
    v_chat public.chats := parla.locked_chat(v_uid, p_chat_id);
begin
    if v_chat.compaction_version <> p_expected_version or v_chat.turn_count < p_summarized_through then
        return null;
    end if;
    perform parla.check_embedder(v_uid, p_embedder, p_summary_embedding);
    update public.chats set
        rolling_summary = p_rolling_summary, summarized_through = p_summarized_through,
        summary_text = p_summary_text, summary_embedding = p_summary_embedding, summary_embedder = p_embedder,
        title = coalesce(title, nullif(btrim(p_title), '')), compaction_version = compaction_version + 1
    where id = p_chat_id returning * into v_chat;
    return parla.chat_json(v_chat);
end $$;

-- Describes a chat (search text + vector) unless a compaction committed since p_expected_version.
create function public.set_description(
    p_chat_id uuid, p_expected_version integer, p_summary_text text, p_summary_embedding extensions.vector,
    p_embedder text, p_title text default null, p_user_id uuid default null
) returns boolean
language plpgsql volatile security invoker set search_path = pg_catalog, public as $$
declare
    v_uid uuid := parla.owner_id(p_user_id);
    v_chat public.chats := parla.locked_chat(v_uid, p_chat_id);
begin
    if v_chat.compaction_version <> p_expected_version then
        return false;
    end if;
    perform parla.check_embedder(v_uid, p_embedder, p_summary_embedding);
    update public.chats set summary_text = p_summary_text, summary_embedding = p_summary_embedding,
        summary_embedder = p_embedder, title = coalesce(title, nullif(btrim(p_title), ''))
    where id = p_chat_id;
    return true;
end $$;

create function public.upsert_summary(
    p_chat_id uuid, p_level integer, p_start_seq integer, p_end_seq integer, p_summary text,
    p_embedding extensions.vector, p_embedder text, p_user_id uuid default null
) returns jsonb
language plpgsql volatile security invoker set search_path = pg_catalog, public as $$
declare
    v_uid uuid := parla.owner_id(p_user_id);
    v_chat public.chats := parla.locked_chat(v_uid, p_chat_id);
    v_row public.chat_summaries;
begin
    perform parla.check_embedder(v_uid, p_embedder, p_embedding);
    insert into public.chat_summaries (chat_id, user_id, level, start_seq, end_seq, summary, embedding, embedder)
    values (v_chat.id, v_uid, p_level, p_start_seq, p_end_seq, p_summary, p_embedding, p_embedder)
    on conflict (chat_id, level, start_seq, end_seq) do update set
        summary = excluded.summary, embedding = excluded.embedding, embedder = excluded.embedder, updated_at = now()
    returning * into v_row;
    return to_jsonb(v_row) - 'embedding' - 'user_id';
end $$;

create function public.upsert_facts(
    p_chat_id uuid, p_start_seq integer, p_end_seq integer, p_facts text,
    p_embedding extensions.vector default null, p_embedder text default null, p_user_id uuid default null
) returns jsonb
language plpgsql volatile security invoker set search_path = pg_catalog, public as $$
declare
    v_uid uuid := parla.owner_id(p_user_id);
    v_chat public.chats := parla.locked_chat(v_uid, p_chat_id);
    v_row public.chat_facts;
begin
    if p_embedding is not null then
        perform parla.check_embedder(v_uid, p_embedder, p_embedding);
    end if;
    insert into public.chat_facts (chat_id, user_id, start_seq, end_seq, facts, embedding, embedder)
    values (v_chat.id, v_uid, p_start_seq, p_end_seq, p_facts, p_embedding,
            case when p_embedding is null then null else p_embedder end)
    on conflict (chat_id, start_seq, end_seq) do update set
        facts = excluded.facts, embedding = excluded.embedding, embedder = excluded.embedder, updated_at = now()
    returning * into v_row;
    return to_jsonb(v_row) - 'embedding' - 'user_id';
end $$;

-- Each of the caller's chats with its best-matching embedded text (description, chunk or meta
-- summary, facts), most similar first. With p_embedder, a query of another embedder is refused.
create function public.search_chats_semantic(
    query_embedding extensions.vector, match_count integer default 10, p_embedder text default null,
    p_user_id uuid default null
) returns table (
    chat_id uuid, title text, similarity double precision, matched_kind text, start_seq integer,
    end_seq integer, matched_text text, last_activity_at timestamptz
)
language plpgsql stable security invoker set search_path = pg_catalog, public, extensions as $$
declare
    v_uid uuid := parla.owner_id(p_user_id);
    v_known public.memory_embedders;
begin
    select * into v_known from public.memory_embedders e where e.user_id = v_uid;
    if not found then
        return;
    end if;
    if (p_embedder is not null and p_embedder <> v_known.embedder) or vector_dims(query_embedding) <> v_known.dim then
        raise exception 'the query was embedded by % (% dims) but this store''s vectors by % (% dims)',
            coalesce(p_embedder, 'an unnamed embedder'), vector_dims(query_embedding), v_known.embedder, v_known.dim
            using errcode = 'P0001', detail = 'embedder_mismatch',
                  hint = 'run `parla memory reembed` or set PARLA_EMBEDDER back';
    end if;
    return query
    with texts as (
        select c.id as chat_id, 'summary'::text as kind, 0 as s, 0 as e, c.summary_text as body,
               c.summary_embedding as v
        from public.chats c where c.user_id = v_uid and c.summary_embedding is not null
        union all
        select m.chat_id, case m.level when 0 then 'chunk' else 'meta' end, m.start_seq, m.end_seq, m.summary,
               m.embedding
        from public.chat_summaries m where m.user_id = v_uid
        union all
        select f.chat_id, 'facts', f.start_seq, f.end_seq, f.facts, f.embedding
        from public.chat_facts f where f.user_id = v_uid and f.embedding is not null
    ),
    best as (
        select distinct on (t.chat_id) t.chat_id, t.kind, t.s, t.e, t.body, 1 - (t.v <=> query_embedding) as sim
        from texts t
        order by t.chat_id, t.v <=> query_embedding
    )
    select b.chat_id, c.title, b.sim, b.kind, b.s, b.e, b.body, c.last_activity_at
    from best b join public.chats c on c.id = b.chat_id
    order by b.sim desc, c.last_activity_at desc
    limit greatest(match_count, 0);
end $$;

-- Every embedded text of the caller (for re-embedding) and the embedder that made them.
create function public.embedded_texts(p_user_id uuid default null) returns table (
    chat_id uuid, kind text, start_seq integer, end_seq integer, body text
)
language plpgsql stable security invoker set search_path = pg_catalog, public as $$
declare
    v_uid uuid := parla.owner_id(p_user_id);
begin
    return query
    select c.id, 'summary'::text, 0, 0, c.summary_text from public.chats c
        where c.user_id = v_uid and c.summary_text <> ''
    union all
    select m.chat_id, case m.level when 0 then 'chunk' else 'meta' end, m.start_seq, m.end_seq, m.summary
        from public.chat_summaries m where m.user_id = v_uid
    union all
    select f.chat_id, 'facts', f.start_seq, f.end_seq, f.facts from public.chat_facts f
        where f.user_id = v_uid and f.facts <> '';
end $$;

-- Writes every vector anew in one transaction and records the new embedder, so a user's store is
-- never left with vectors of two embedders. p_items: [{chat_id, kind, start_seq, end_seq, embedding}].
create function public.replace_embeddings(p_items jsonb, p_embedder text, p_user_id uuid default null)
returns integer
language plpgsql volatile security invoker set search_path = pg_catalog, public, extensions as $$
declare
    v_uid uuid := parla.owner_id(p_user_id);
    v_item jsonb;
    v_vector extensions.vector;
    v_dims integer[];
    v_count integer := 0;
    v_n integer;
begin
    select array_agg(distinct jsonb_array_length(i->'embedding')) into v_dims from jsonb_array_elements(p_items) i;
    if coalesce(array_length(v_dims, 1), 0) > 1 then
        raise exception 'vectors of several dimensions given: %', v_dims
            using errcode = 'P0001', detail = 'embedder_mismatch';
    end if;
    if parla.vector_count(v_uid) > jsonb_array_length(p_items) then
        raise exception '% embedded texts would be left with old vectors',
            parla.vector_count(v_uid) - jsonb_array_length(p_items)
            using errcode = 'P0001', detail = 'bad_input', hint = 'embed every text from embedded_texts()';
    end if;
    for v_item in select value from jsonb_array_elements(p_items) loop
        v_vector := (v_item->'embedding')::text::extensions.vector;
        if v_item->>'kind' = 'summary' then
            update public.chats set summary_embedding = v_vector, summary_embedder = p_embedder
                where id = (v_item->>'chat_id')::uuid and user_id = v_uid;
        elsif v_item->>'kind' = 'facts' then
            update public.chat_facts set embedding = v_vector, embedder = p_embedder
                where chat_id = (v_item->>'chat_id')::uuid and user_id = v_uid
                  and start_seq = (v_item->>'start_seq')::int and end_seq = (v_item->>'end_seq')::int;
        else
            update public.chat_summaries set embedding = v_vector, embedder = p_embedder
                where chat_id = (v_item->>'chat_id')::uuid and user_id = v_uid
                  and level = case v_item->>'kind' when 'chunk' then 0 else 1 end
                  and start_seq = (v_item->>'start_seq')::int and end_seq = (v_item->>'end_seq')::int;
        end if;
        get diagnostics v_n = row_count;
        v_count := v_count + v_n;
    end loop;
    if v_dims is not null then
        insert into public.memory_embedders (user_id, embedder, dim) values (v_uid, p_embedder, v_dims[1])
        on conflict (user_id) do update set embedder = excluded.embedder, dim = excluded.dim;
    end if;
    return v_count;
end $$;

create function public.memory_stats(p_user_id uuid default null) returns jsonb
language plpgsql stable security invoker set search_path = pg_catalog, public as $$
declare
    v_uid uuid := parla.owner_id(p_user_id);
begin
    return jsonb_build_object(
        'total_chats', (select count(*) from public.chats where user_id = v_uid),
        'total_messages', (select count(*) from public.chat_turns where user_id = v_uid),
        'total_summaries', (select count(*) from public.chat_summaries where user_id = v_uid),
        'total_facts', (select count(*) from public.chat_facts where user_id = v_uid and facts <> ''),
        'total_pins', (select count(*) from public.chat_pins where user_id = v_uid),
        'oldest_message', (select min(created_at) from public.chat_turns where user_id = v_uid),
        'newest_message', (select max(created_at) from public.chat_turns where user_id = v_uid),
        'average_importance', (select round(avg(importance)::numeric, 2) from public.chat_pins where user_id = v_uid),
        'embedder', (select embedder from public.memory_embedders where user_id = v_uid),
        'embedding_dim', (select dim from public.memory_embedders where user_id = v_uid),
        'embedded_texts', parla.vector_count(v_uid));
end $$;

-- What `parla db check` compares with the migrations it ships.
create function public.parla_schema_version() returns integer
language sql immutable as $$ select 1 $$;

-- Only signed-in users and the service role may call Parla's functions.
do $$
declare
    f record;
begin
    for f in
        select p.oid::regprocedure as sig from pg_proc p join pg_namespace n on n.oid = p.pronamespace
        where (n.nspname = 'public' and p.proname in ('create_chat', 'append_turns', 'load_chat', 'find_chats',
               'rename_chat', 'delete_chat', 'commit_compaction', 'set_description', 'upsert_summary',
               'upsert_facts', 'search_chats_semantic', 'embedded_texts', 'replace_embeddings', 'memory_stats',
               'parla_schema_version'))
           or n.nspname = 'parla'
    loop
        execute format('revoke all on function %s from public, anon', f.sig);
        execute format('grant execute on function %s to authenticated, service_role', f.sig);
    end loop;
end $$;
