-- Recall inside one chat: the chat's embedded texts (windows of what was said, summaries, facts,
-- its description) most similar to a request, as a jsonb array, most similar first. One chat's
-- texts are few, so they are compared directly (no index is needed to be fast).

-- Whether the caller's vectors can be compared with a query: false before the first vector; an
-- error when the query was made by another embedder (or has another dimension).
create function parla.query_fits(p_uid uuid, p_embedder text, p_query extensions.vector) returns boolean
language plpgsql stable security invoker set search_path = pg_catalog, public, extensions as $$
declare
    v_known public.memory_embedders;
begin
    select * into v_known from public.memory_embedders e where e.user_id = p_uid;
    if not found then
        return false;
    end if;
    if (p_embedder is not null and p_embedder <> v_known.embedder) or vector_dims(p_query) <> v_known.dim then
        raise exception 'the query was embedded by % (% dims) but this store''s vectors by % (% dims)',
            coalesce(p_embedder, 'an unnamed embedder'), vector_dims(p_query), v_known.embedder, v_known.dim
            using errcode = 'P0001', detail = 'embedder_mismatch',
                  hint = 'run `parla memory reembed` or set PARLA_EMBEDDER back';
    end if;
    return true;
end $$;

create function public.search_chat_texts(
    p_chat_id uuid, query_embedding extensions.vector, match_count integer default 20,
    p_embedder text default null, p_user_id uuid default null
) returns jsonb
language plpgsql stable security invoker set search_path = pg_catalog, public, extensions as $$
declare
    v_uid uuid := parla.owner_id(p_user_id);
begin
    if match_count <= 0 or not parla.query_fits(v_uid, p_embedder, query_embedding) then
        return '[]'::jsonb;
    end if;
    return coalesce((
        select jsonb_agg(jsonb_build_object('matched_kind', t.kind, 'start_seq', t.s, 'end_seq', t.e,
                                            'similarity', t.sim, 'matched_text', t.body)
                         order by t.sim desc, t.kind, t.s)
        from (
            select * from (
                select 'summary'::text as kind, 0 as s, 0 as e, 1 - (c.summary_embedding <=> query_embedding) as sim,
                       c.summary_text as body
                from public.chats c where c.user_id = v_uid and c.id = p_chat_id and c.summary_embedding is not null
                union all
                select case m.level when 0 then 'chunk' else 'meta' end, m.start_seq, m.end_seq,
                       1 - (m.embedding <=> query_embedding), m.summary
                from public.chat_summaries m where m.user_id = v_uid and m.chat_id = p_chat_id
                union all
                select 'facts', f.start_seq, f.end_seq, 1 - (f.embedding <=> query_embedding), f.facts
                from public.chat_facts f where f.user_id = v_uid and f.chat_id = p_chat_id and f.embedding is not null
                union all
                select 'turns', w.start_seq, w.end_seq, 1 - (w.embedding <=> query_embedding), w.body
                from public.chat_windows w where w.user_id = v_uid and w.chat_id = p_chat_id
            ) a
            order by a.sim desc, a.kind, a.s
            limit match_count
        ) t), '[]'::jsonb);
end $$;

revoke all on function public.search_chat_texts, parla.query_fits from public, anon;
grant execute on function public.search_chat_texts, parla.query_fits to authenticated, service_role;

create or replace function public.parla_schema_version() returns integer
language sql immutable as $$ select 10 $$;
