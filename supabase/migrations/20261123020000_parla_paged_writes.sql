-- Writes that stay inside Supabase's statement timeout (8 s for signed-in users) at any size.
--
-- Appends take time linear in the number of turns. The first version built its result by
-- concatenating to a jsonb array once per turn, which copies the array each time: 8,000 turns
-- took 6-10 s. Now the turns are checked, inserted and answered by a few set-based statements.
create or replace function parla.append(p_chat public.chats, p_turns jsonb) returns jsonb
language plpgsql volatile security invoker set search_path = pg_catalog, public as $$
declare
    v_bad jsonb;
    v_known record;
    v_added integer;
    v_latest timestamptz;
    v_out jsonb;
begin
    if p_turns is null or jsonb_typeof(p_turns) <> 'array' then
        raise exception 'turns must be a JSON array' using errcode = 'P0001', detail = 'bad_input';
    end if;
    select t.value into v_bad from jsonb_array_elements(p_turns) t
    where jsonb_typeof(t.value) <> 'object' or coalesce(t.value->>'id', '') = ''
       or jsonb_typeof(t.value->'parts') is distinct from 'array'
    limit 1;
    if found then
        raise exception 'each turn needs an id, a role and parts: %', left(v_bad::text, 200)
            using errcode = 'P0001', detail = 'bad_input';
    end if;
    if (select count(distinct t->>'id') from jsonb_array_elements(p_turns) t) <> jsonb_array_length(p_turns) then
        raise exception 'the same turn id appears twice in one append' using errcode = 'P0001', detail = 'bad_input';
    end if;
    -- a turn id already stored in another chat of this user is a conflict; in this chat, a repeat
    select t.value->>'id' as id, c.chat_id into v_known
    from jsonb_array_elements(p_turns) t
    join public.chat_turns c on c.user_id = p_chat.user_id and c.id = t.value->>'id'
    where c.chat_id <> p_chat.id
    limit 1;
    if found then
        raise exception 'turn % is already stored in chat %', v_known.id, v_known.chat_id
            using errcode = 'P0001', detail = 'turn_conflict';
    end if;
    with fresh as (
        select t.value as turn, p_chat.turn_count + row_number() over (order by t.ordinality) as seq
        from jsonb_array_elements(p_turns) with ordinality t
        where not exists (select 1 from public.chat_turns c where c.user_id = p_chat.user_id and c.id = t.value->>'id')
    ), inserted as (
        insert into public.chat_turns
            (chat_id, user_id, seq, id, role, parts, thinking, created_at, interrupted, source, model_variant)
        select p_chat.id, p_chat.user_id, f.seq, f.turn->>'id', f.turn->>'role', f.turn->'parts', f.turn->>'thinking',
               coalesce((f.turn->>'created_at')::timestamptz, now()),
               coalesce((f.turn->>'interrupted')::boolean, false), coalesce(f.turn->>'source', 'voice'),
               f.turn->>'model_variant'
        from fresh f
        returning created_at
    )
    select count(*), max(created_at) into v_added, v_latest from inserted;
    if v_added > 0 then
        update public.chats set turn_count = turn_count + v_added,
            last_activity_at = greatest(last_activity_at, v_latest)
        where id = p_chat.id returning * into p_chat;
    end if;
    select coalesce(jsonb_agg(jsonb_build_object('id', c.id, 'seq', c.seq) order by t.ordinality), '[]'::jsonb)
    into v_out
    from jsonb_array_elements(p_turns) with ordinality t
    join public.chat_turns c on c.user_id = p_chat.user_id and c.id = t.value->>'id';
    return jsonb_build_object('chat', parla.chat_json(p_chat), 'turns', v_out, 'added', v_added);
end $$;

-- Re-embedding in pages: stage_embeddings keeps each page of new vectors, then commit_embeddings
-- writes them all in one transaction (a user's store never holds vectors of two embedders). One
-- request with every vector (replace_embeddings) timed out at a few thousand 768-dim texts.
create table parla.pending_embeddings (
    user_id uuid not null default auth.uid() references auth.users (id) on delete cascade,
    embedder text not null,
    chat_id uuid not null,
    kind text not null check (kind in ('summary', 'chunk', 'meta', 'facts')),
    start_seq integer not null,
    end_seq integer not null,
    embedding extensions.vector not null,
    primary key (user_id, chat_id, kind, start_seq, end_seq)
);
alter table parla.pending_embeddings enable row level security;
create policy pending_embeddings_owner on parla.pending_embeddings for all to authenticated
    using (user_id = (select auth.uid())) with check (user_id = (select auth.uid()));
grant select, insert, update, delete on parla.pending_embeddings to authenticated, service_role;

-- Keeps one page of new vectors (p_items: [{chat_id, kind, start_seq, end_seq, embedding}]);
-- p_reset drops what an earlier, unfinished run staged. Returns how many are staged in all.
create function public.stage_embeddings(
    p_items jsonb, p_embedder text, p_reset boolean default false, p_user_id uuid default null
) returns integer
language plpgsql volatile security invoker set search_path = pg_catalog, public, extensions as $$
declare
    v_uid uuid := parla.owner_id(p_user_id);
begin
    if coalesce(p_embedder, '') = '' then
        raise exception 'a vector needs the name of its embedder' using errcode = 'P0001', detail = 'bad_input';
    end if;
    if p_reset then
        delete from parla.pending_embeddings where user_id = v_uid;
    end if;
    if exists (select 1 from parla.pending_embeddings where user_id = v_uid and embedder <> p_embedder) then
        raise exception 'vectors of another embedder are staged' using errcode = 'P0001', detail = 'bad_input',
            hint = 'start again with p_reset';
    end if;
    insert into parla.pending_embeddings (user_id, embedder, chat_id, kind, start_seq, end_seq, embedding)
    select v_uid, p_embedder, i.chat_id, i.kind, i.start_seq, i.end_seq, i.embedding::text::extensions.vector
    from jsonb_to_recordset(coalesce(p_items, '[]'::jsonb))
        as i(chat_id uuid, kind text, start_seq integer, end_seq integer, embedding jsonb)
    on conflict (user_id, chat_id, kind, start_seq, end_seq) do update set embedding = excluded.embedding;
    return (select count(*) from parla.pending_embeddings where user_id = v_uid);
end $$;

-- Writes every staged vector in one transaction and records the new embedder, or refuses when a
-- text would keep its old vector. Returns how many texts were written.
create function public.commit_embeddings(p_embedder text, p_user_id uuid default null) returns integer
language plpgsql volatile security invoker set search_path = pg_catalog, public, extensions as $$
declare
    v_uid uuid := parla.owner_id(p_user_id);
    v_dims integer[];
    v_staged integer;
    v_count integer := 0;
    v_n integer;
begin
    select array_agg(distinct vector_dims(embedding)), count(*) into v_dims, v_staged
    from parla.pending_embeddings where user_id = v_uid and embedder = p_embedder;
    if coalesce(array_length(v_dims, 1), 0) > 1 then
        raise exception 'vectors of several dimensions given: %', v_dims
            using errcode = 'P0001', detail = 'embedder_mismatch';
    end if;
    if parla.vector_count(v_uid) > v_staged then
        raise exception '% embedded texts would be left with old vectors', parla.vector_count(v_uid) - v_staged
            using errcode = 'P0001', detail = 'bad_input', hint = 'embed every text from embedded_texts()';
    end if;
    update public.chats c set summary_embedding = s.embedding, summary_embedder = p_embedder
    from parla.pending_embeddings s
    where s.user_id = v_uid and s.embedder = p_embedder and s.kind = 'summary' and c.id = s.chat_id
      and c.user_id = v_uid;
    get diagnostics v_n = row_count;
    v_count := v_count + v_n;
    update public.chat_summaries m set embedding = s.embedding, embedder = p_embedder
    from parla.pending_embeddings s
    where s.user_id = v_uid and s.embedder = p_embedder and s.kind in ('chunk', 'meta')
      and m.chat_id = s.chat_id and m.user_id = v_uid and m.level = case s.kind when 'chunk' then 0 else 1 end
      and m.start_seq = s.start_seq and m.end_seq = s.end_seq;
    get diagnostics v_n = row_count;
    v_count := v_count + v_n;
    update public.chat_facts f set embedding = s.embedding, embedder = p_embedder
    from parla.pending_embeddings s
    where s.user_id = v_uid and s.embedder = p_embedder and s.kind = 'facts'
      and f.chat_id = s.chat_id and f.user_id = v_uid and f.start_seq = s.start_seq and f.end_seq = s.end_seq;
    get diagnostics v_n = row_count;
    v_count := v_count + v_n;
    if v_dims is not null then
        insert into public.memory_embedders (user_id, embedder, dim) values (v_uid, p_embedder, v_dims[1])
        on conflict (user_id) do update set embedder = excluded.embedder, dim = excluded.dim;
    end if;
    delete from parla.pending_embeddings where user_id = v_uid;
    return v_count;
end $$;

revoke all on function public.stage_embeddings, public.commit_embeddings from public, anon;
grant execute on function public.stage_embeddings, public.commit_embeddings to authenticated, service_role;

create or replace function public.parla_schema_version() returns integer
language sql immutable as $$ select 3 $$;
