-- Importance and provenance: each turn's and each chunk summary's importance (0-10), a pin's
-- source turn by its place in the chat, the important summarised turns in the memory context,
-- and the stats of one chat as well as of the whole store.
--
-- Parla scores a turn by its rules as it sends it (the turn's "importance"); turns stored before
-- this migration have none and stay out of the important turns (their chunk summaries and facts
-- still cover them).

alter table public.chat_turns add column importance real check (importance between 0 and 10);
alter table public.chat_summaries add column importance real check (importance between 0 and 10);
alter table public.chat_pins add column source_seq integer;
create index chat_turns_importance on public.chat_turns (chat_id, importance desc, seq desc);

-- parla.append stores each turn's importance from the next migration on (which also adds the
-- turn's token usage): both ship together, so the function is replaced once.

drop function public.upsert_summary(uuid, integer, integer, integer, text, extensions.vector, text, uuid);
create function public.upsert_summary(
    p_chat_id uuid, p_level integer, p_start_seq integer, p_end_seq integer, p_summary text,
    p_embedding extensions.vector, p_embedder text, p_user_id uuid default null, p_importance real default null
) returns jsonb
language plpgsql volatile security invoker set search_path = pg_catalog, public as $$
declare
    v_uid uuid := parla.owner_id(p_user_id);
    v_chat public.chats := parla.locked_chat(v_uid, p_chat_id);
    v_row public.chat_summaries;
begin
    perform parla.check_embedder(v_uid, p_embedder, p_embedding);
    insert into public.chat_summaries
        (chat_id, user_id, level, start_seq, end_seq, summary, embedding, embedder, importance)
    values (v_chat.id, v_uid, p_level, p_start_seq, p_end_seq, p_summary, p_embedding, p_embedder, p_importance)
    on conflict (chat_id, level, start_seq, end_seq) do update set
        summary = excluded.summary, embedding = excluded.embedding, embedder = excluded.embedder,
        importance = excluded.importance, updated_at = now()
    returning * into v_row;
    return to_jsonb(v_row) - 'embedding' - 'user_id';
end $$;

-- The memory context's reads, with the summarised turns of at least p_min_importance (the most
-- important first, the newest first among equals, at most p_important_limit).
drop function public.load_memory(uuid, uuid);
create function public.load_memory(
    p_chat_id uuid, p_user_id uuid default null, p_min_importance real default 7,
    p_important_limit integer default 30
) returns jsonb
language plpgsql stable security invoker set search_path = pg_catalog, public as $$
declare
    v_chat jsonb := public.load_chat(p_chat_id, 1, 0, p_user_id)->'chat';
    v_through integer := (v_chat->>'summarized_through')::integer;
begin
    return jsonb_build_object(
        'chat', v_chat,
        'turns', public.load_chat(p_chat_id, v_through + 1, null, p_user_id)->'turns',
        'pins', coalesce((
            select jsonb_agg(to_jsonb(p) - 'user_id' order by p.importance desc, p.created_at, p.id)
            from public.chat_pins p where p.chat_id = p_chat_id and p.forgotten_at is null), '[]'::jsonb),
        'metas', coalesce((
            select jsonb_agg(to_jsonb(s) - 'user_id' - 'embedding' - 'embedder' order by s.start_seq)
            from public.chat_summaries s where s.chat_id = p_chat_id and s.level = 1), '[]'::jsonb),
        'facts', coalesce((
            select jsonb_agg(to_jsonb(f) - 'user_id' - 'embedding' - 'embedder' order by f.start_seq)
            from public.chat_facts f where f.chat_id = p_chat_id), '[]'::jsonb),
        'important', coalesce((
            select jsonb_agg(parla.turn_json(t) order by t.importance desc, t.seq desc)
            from (select * from public.chat_turns t
                  where t.chat_id = p_chat_id and t.seq <= v_through and t.importance >= p_min_importance
                  order by t.importance desc, t.seq desc limit p_important_limit) t), '[]'::jsonb));
end $$;

-- The store's figures, or one chat's (p_chat_id; a chat the user does not have is chat_not_found).
drop function public.memory_stats(uuid);
create function public.memory_stats(
    p_user_id uuid default null, p_chat_id uuid default null, p_important real default 7
) returns jsonb
language plpgsql stable security invoker set search_path = pg_catalog, public as $$
declare
    v_uid uuid := parla.owner_id(p_user_id);
begin
    if p_chat_id is not null then
        perform public.load_chat(p_chat_id, 1, 0, p_user_id);
    end if;
    return jsonb_build_object(
        'total_chats', (select count(*) from public.chats
                        where user_id = v_uid and (p_chat_id is null or id = p_chat_id)),
        'total_messages', (select count(*) from public.chat_turns
                           where user_id = v_uid and (p_chat_id is null or chat_id = p_chat_id)),
        'total_summaries', (select count(*) from public.chat_summaries
                            where user_id = v_uid and (p_chat_id is null or chat_id = p_chat_id)),
        'total_facts', (select count(*) from public.chat_facts
                        where user_id = v_uid and facts <> '' and (p_chat_id is null or chat_id = p_chat_id)),
        'total_pins', (select count(*) from public.chat_pins
                       where user_id = v_uid and forgotten_at is null and (p_chat_id is null or chat_id = p_chat_id)),
        'auto_pins', (select count(*) from public.chat_pins
                      where user_id = v_uid and forgotten_at is null and pin_type = 'auto'
                        and (p_chat_id is null or chat_id = p_chat_id)),
        'oldest_message', (select min(created_at) from public.chat_turns
                           where user_id = v_uid and (p_chat_id is null or chat_id = p_chat_id)),
        'newest_message', (select max(created_at) from public.chat_turns
                           where user_id = v_uid and (p_chat_id is null or chat_id = p_chat_id)),
        'average_importance', (select round(avg(importance)::numeric, 2) from public.chat_pins
                               where user_id = v_uid and forgotten_at is null
                                 and (p_chat_id is null or chat_id = p_chat_id)),
        'average_turn_importance', (select round(avg(importance)::numeric, 2) from public.chat_turns
                                    where user_id = v_uid and (p_chat_id is null or chat_id = p_chat_id)),
        'important_turns', (select count(*) from public.chat_turns
                            where user_id = v_uid and importance >= p_important
                              and (p_chat_id is null or chat_id = p_chat_id)),
        'embedder', (select embedder from public.memory_embedders where user_id = v_uid),
        'embedding_dim', (select dim from public.memory_embedders where user_id = v_uid),
        'embedded_texts', case when p_chat_id is null then parla.vector_count(v_uid) else
            (select count(*) from public.chats
             where user_id = v_uid and id = p_chat_id and summary_embedding is not null)
            + (select count(*) from public.chat_summaries where user_id = v_uid and chat_id = p_chat_id)
            + (select count(*) from public.chat_facts
               where user_id = v_uid and chat_id = p_chat_id and embedding is not null)
            + (select count(*) from public.chat_windows where user_id = v_uid and chat_id = p_chat_id) end);
end $$;

revoke all on function public.upsert_summary, public.load_memory, public.memory_stats from public, anon;
grant execute on function public.upsert_summary, public.load_memory, public.memory_stats
    to authenticated, service_role;

create or replace function public.parla_schema_version() returns integer
language sql immutable as $$ select 5 $$;
