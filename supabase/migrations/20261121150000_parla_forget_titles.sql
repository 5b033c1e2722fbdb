-- Forgetting: a forgotten pin keeps its row with forgotten_at set; a forgotten fact
-- line moves from `facts` to `forgotten` in its range's row, so regenerating that range keeps
-- it out and `parla memory restore` can bring it back.
alter table public.chat_pins add column forgotten_at timestamptz;
alter table public.chat_facts add column forgotten text not null default '';

-- Titles: title_generated marks a title Parla made, which a compaction may refresh when the chat
-- drifts; a title the user gave (at creation or by renaming) is never replaced.
alter table public.chats add column title_generated boolean not null default false;

create function parla.generated_title(p_chat public.chats, p_title text) returns public.chats
language plpgsql immutable set search_path = pg_catalog, public as $$
begin
    if nullif(btrim(p_title), '') is not null and (p_chat.title is null or p_chat.title_generated) then
        p_chat.title := btrim(p_title);
        p_chat.title_generated := true;
    end if;
    return p_chat;
end $$;

create or replace function public.rename_chat(p_chat_id uuid, p_title text, p_user_id uuid default null)
returns jsonb
language plpgsql volatile security invoker set search_path = pg_catalog, public as $$
declare
    v_chat public.chats := parla.locked_chat(parla.owner_id(p_user_id), p_chat_id);
begin
    if btrim(coalesce(p_title, '')) = '' then
        raise exception 'a chat title cannot be empty' using errcode = 'P0001', detail = 'bad_input';
    end if;
    update public.chats set title = btrim(p_title), title_generated = false
    where id = v_chat.id returning * into v_chat;
    return parla.chat_json(v_chat);
end $$;

create or replace function public.commit_compaction(
    p_chat_id uuid, p_expected_version integer, p_summarized_through integer, p_rolling_summary text,
    p_summary_text text, p_summary_embedding extensions.vector, p_embedder text, p_title text default null,
    p_user_id uuid default null
) returns jsonb
language plpgsql volatile security invoker set search_path = pg_catalog, public as $$
declare
    v_uid uuid := parla.owner_id(p_user_id);
    v_chat public.chats := parla.locked_chat(v_uid, p_chat_id);
    v_titled public.chats;
begin
    if v_chat.compaction_version <> p_expected_version or v_chat.turn_count < p_summarized_through then
        return null;
    end if;
    perform parla.check_embedder(v_uid, p_embedder, p_summary_embedding);
    v_titled := parla.generated_title(v_chat, p_title);
    update public.chats set
        rolling_summary = p_rolling_summary, summarized_through = p_summarized_through,
        summary_text = p_summary_text, summary_embedding = p_summary_embedding, summary_embedder = p_embedder,
        title = v_titled.title, title_generated = v_titled.title_generated,
        compaction_version = compaction_version + 1
    where id = p_chat_id returning * into v_chat;
    return parla.chat_json(v_chat);
end $$;

create or replace function public.set_description(
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
    v_chat := parla.generated_title(v_chat, p_title);
    update public.chats set summary_text = p_summary_text, summary_embedding = p_summary_embedding,
        summary_embedder = p_embedder, title = v_chat.title, title_generated = v_chat.title_generated
    where id = p_chat_id;
    return true;
end $$;

-- Rewrite the lines of an existing facts range (forget or restore one of them), with the
-- embedding of the lines that remain.
create function public.set_fact_lines(
    p_chat_id uuid, p_start_seq integer, p_end_seq integer, p_facts text, p_forgotten text,
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
    update public.chat_facts set facts = p_facts, forgotten = p_forgotten, embedding = p_embedding,
        embedder = case when p_embedding is null then null else p_embedder end, updated_at = now()
    where chat_id = v_chat.id and start_seq = p_start_seq and end_seq = p_end_seq
    returning * into v_row;
    if v_row is null then
        raise exception 'no facts for messages %-% of chat %', p_start_seq, p_end_seq, p_chat_id
            using errcode = 'P0002';
    end if;
    return to_jsonb(v_row) - 'embedding' - 'user_id';
end $$;

revoke all on function public.set_fact_lines, parla.generated_title from public, anon;
grant execute on function public.set_fact_lines, parla.generated_title to authenticated, service_role;

create or replace function public.memory_stats(p_user_id uuid default null) returns jsonb
language plpgsql stable security invoker set search_path = pg_catalog, public as $$
declare
    v_uid uuid := parla.owner_id(p_user_id);
begin
    return jsonb_build_object(
        'total_chats', (select count(*) from public.chats where user_id = v_uid),
        'total_messages', (select count(*) from public.chat_turns where user_id = v_uid),
        'total_summaries', (select count(*) from public.chat_summaries where user_id = v_uid),
        'total_facts', (select count(*) from public.chat_facts where user_id = v_uid and facts <> ''),
        'total_pins', (select count(*) from public.chat_pins where user_id = v_uid and forgotten_at is null),
        'oldest_message', (select min(created_at) from public.chat_turns where user_id = v_uid),
        'newest_message', (select max(created_at) from public.chat_turns where user_id = v_uid),
        'average_importance', (select round(avg(importance)::numeric, 2) from public.chat_pins
                               where user_id = v_uid and forgotten_at is null),
        'embedder', (select embedder from public.memory_embedders where user_id = v_uid),
        'embedding_dim', (select dim from public.memory_embedders where user_id = v_uid),
        'embedded_texts', parla.vector_count(v_uid));
end $$;

-- Everything a chat's memory context needs, in one round trip (a switch costs the search plus this):
-- the chat, its unsummarised tail, its pins (not forgotten), meta summaries and facts.
create function public.load_memory(p_chat_id uuid, p_user_id uuid default null) returns jsonb
language plpgsql stable security invoker set search_path = pg_catalog, public as $$
declare
    -- the chat alone first (raises chat_not_found), then its turns after the rolling summary
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
            from public.chat_facts f where f.chat_id = p_chat_id), '[]'::jsonb));
end $$;

revoke all on function public.load_memory from public, anon;
grant execute on function public.load_memory to authenticated, service_role;

create or replace function public.parla_schema_version() returns integer
language sql immutable as $$ select 2 $$;
