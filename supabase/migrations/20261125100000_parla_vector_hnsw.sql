-- Vector indexes: pgvector HNSW over every embedded text, so a search no longer scans all of a
-- user's vectors (a heavy user holds 150,000-200,000 of them).
--
-- * The vector columns have no fixed dimension (the embedder's is per user), and HNSW needs one:
--   each table gets a partial expression index per supported dimension (768: gemini-embedding-001,
--   256: the offline embedder), over `embedding::halfvec(n)`: the index is half the size of a
--   float32 one, and it only chooses candidates, which are then ranked with the stored float32
--   vectors, so half precision loses no result. Other dimensions keep the exact scan.
-- * The per-user filter: pgvector's iterative index scans (hnsw.iterative_scan = relaxed_order,
--   pgvector >= 0.8) keep scanning until enough of the caller's rows are found.
-- * A search takes the chats of the nearest texts the indexes find (parla.nearest_chats), then
--   ranks only those chats exactly, as before; on a table without an index it scans as before.
-- * The indexes are built in this migration's transaction, which blocks writes to these tables
--   while they build. On a project that already holds a large history, build them first without
--   blocking writes, one at a time in the SQL editor (CREATE INDEX CONCURRENTLY cannot run inside
--   a migration's transaction), with the same statements as below and CONCURRENTLY after INDEX:
--   this migration then finds them (IF NOT EXISTS) and builds nothing.

create index if not exists chats_hnsw_768 on public.chats
    using hnsw ((summary_embedding::extensions.halfvec(768)) extensions.halfvec_cosine_ops) where extensions.vector_dims(summary_embedding) = 768;
create index if not exists chats_hnsw_256 on public.chats
    using hnsw ((summary_embedding::extensions.halfvec(256)) extensions.halfvec_cosine_ops) where extensions.vector_dims(summary_embedding) = 256;
create index if not exists chat_summaries_hnsw_768 on public.chat_summaries
    using hnsw ((embedding::extensions.halfvec(768)) extensions.halfvec_cosine_ops) where extensions.vector_dims(embedding) = 768;
create index if not exists chat_summaries_hnsw_256 on public.chat_summaries
    using hnsw ((embedding::extensions.halfvec(256)) extensions.halfvec_cosine_ops) where extensions.vector_dims(embedding) = 256;
create index if not exists chat_facts_hnsw_768 on public.chat_facts
    using hnsw ((embedding::extensions.halfvec(768)) extensions.halfvec_cosine_ops) where extensions.vector_dims(embedding) = 768;
create index if not exists chat_facts_hnsw_256 on public.chat_facts
    using hnsw ((embedding::extensions.halfvec(256)) extensions.halfvec_cosine_ops) where extensions.vector_dims(embedding) = 256;
create index if not exists chat_windows_hnsw_768 on public.chat_windows
    using hnsw ((embedding::extensions.halfvec(768)) extensions.halfvec_cosine_ops) where extensions.vector_dims(embedding) = 768;
create index if not exists chat_windows_hnsw_256 on public.chat_windows
    using hnsw ((embedding::extensions.halfvec(256)) extensions.halfvec_cosine_ops) where extensions.vector_dims(embedding) = 256;

-- The chats of the texts nearest to the query by the HNSW indexes, enough of them that the exact
-- ranking of their texts finds the chats an exact scan of every text would; null when the
-- dimension has no index (the caller then scans every text).
create or replace function parla.nearest_chats(
    p_uid uuid, p_query extensions.vector, p_dim integer, p_match_count integer
) returns uuid[]
language plpgsql stable security invoker set search_path = pg_catalog, public, extensions as $$
declare
    v_texts integer := greatest(40 * p_match_count, 400);
    v_found uuid[];
begin
    if p_dim not in (256, 768) then
        return null;
    end if;
    perform set_config('hnsw.iterative_scan', 'relaxed_order', true);
    perform set_config('hnsw.ef_search', least(v_texts, 1000)::text, true);
    -- the dimension is written into the statement so the planner matches the partial indexes
    execute format($q$
        select array_agg(distinct n.chat_id) from (
            (select c.id as chat_id from public.chats c
             where c.user_id = $1 and extensions.vector_dims(c.summary_embedding) = %1$s
             order by c.summary_embedding::extensions.halfvec(%1$s) <=> $2::extensions.halfvec(%1$s) limit $3)
            union all
            (select m.chat_id from public.chat_summaries m
             where m.user_id = $1 and extensions.vector_dims(m.embedding) = %1$s
             order by m.embedding::extensions.halfvec(%1$s) <=> $2::extensions.halfvec(%1$s) limit $3)
            union all
            (select f.chat_id from public.chat_facts f
             where f.user_id = $1 and extensions.vector_dims(f.embedding) = %1$s
             order by f.embedding::extensions.halfvec(%1$s) <=> $2::extensions.halfvec(%1$s) limit $3)
            union all
            (select w.chat_id from public.chat_windows w
             where w.user_id = $1 and extensions.vector_dims(w.embedding) = %1$s
             order by w.embedding::extensions.halfvec(%1$s) <=> $2::extensions.halfvec(%1$s) limit $3)
        ) n $q$, p_dim)
    into v_found using p_uid, p_query, v_texts;
    return v_found;
end $$;

revoke all on function parla.nearest_chats from public, anon;
grant execute on function parla.nearest_chats to authenticated, service_role;

-- The match_count chats with the most similar text, each with its p_texts_per_chat most similar
-- texts (text_rank 1 is the best); chats ordered by their best text, then the latest activity.
-- Only the nearest chats' texts are ranked when the indexes can name them.
create or replace function public.search_chats_semantic(
    query_embedding extensions.vector, match_count integer default 10, p_embedder text default null,
    p_texts_per_chat integer default 1, p_user_id uuid default null
) returns table (
    chat_id uuid, title text, created_at timestamptz, last_activity_at timestamptz, chat_rank integer,
    text_rank integer, similarity double precision, matched_kind text, start_seq integer, end_seq integer,
    matched_text text
)
language plpgsql stable security invoker set search_path = pg_catalog, public, extensions as $$
declare
    v_uid uuid := parla.owner_id(p_user_id);
    v_known public.memory_embedders;
    v_candidates uuid[];
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
    v_candidates := parla.nearest_chats(v_uid, query_embedding, v_known.dim, greatest(match_count, 1));
    return query
    with texts as (
        select c.id as chat_id, 'summary'::text as kind, 0 as s, 0 as e,
               1 - (c.summary_embedding <=> query_embedding) as sim
        from public.chats c where c.user_id = v_uid and c.summary_embedding is not null
          and (v_candidates is null or c.id = any(v_candidates))
        union all
        select m.chat_id, case m.level when 0 then 'chunk' else 'meta' end, m.start_seq, m.end_seq,
               1 - (m.embedding <=> query_embedding)
        from public.chat_summaries m where m.user_id = v_uid and (v_candidates is null or m.chat_id = any(v_candidates))
        union all
        select f.chat_id, 'facts', f.start_seq, f.end_seq, 1 - (f.embedding <=> query_embedding)
        from public.chat_facts f where f.user_id = v_uid and f.embedding is not null
          and (v_candidates is null or f.chat_id = any(v_candidates))
        union all
        select w.chat_id, 'turns', w.start_seq, w.end_seq, 1 - (w.embedding <=> query_embedding)
        from public.chat_windows w where w.user_id = v_uid and (v_candidates is null or w.chat_id = any(v_candidates))
    ),
    -- each chat's best similarity by hashing, not sorting, every text; then only the best chats'
    -- texts are ranked, and only the texts returned are read
    best as (
        select t.chat_id, max(t.sim) as sim from texts t group by t.chat_id
    ),
    top as (
        select b.chat_id, b.sim, c.title, c.created_at, c.last_activity_at,
               row_number() over (order by b.sim desc, c.last_activity_at desc, b.chat_id) as chat_rank
        from best b join public.chats c on c.id = b.chat_id
        order by b.sim desc, c.last_activity_at desc, b.chat_id
        limit greatest(match_count, 0)
    ),
    ranked as (
        select t.*, row_number() over (partition by t.chat_id order by t.sim desc, t.kind, t.s) as text_rank
        from texts t join top b on b.chat_id = t.chat_id
    )
    select b.chat_id, b.title, b.created_at, b.last_activity_at, b.chat_rank::integer, r.text_rank::integer,
           r.sim, r.kind, r.s, r.e,
           case r.kind
               when 'turns' then (select w.body from public.chat_windows w
                                  where w.chat_id = r.chat_id and w.start_seq = r.s)
               when 'summary' then (select c.summary_text from public.chats c where c.id = r.chat_id)
               when 'facts' then (select f.facts from public.chat_facts f
                                  where f.chat_id = r.chat_id and f.start_seq = r.s and f.end_seq = r.e)
               else (select m.summary from public.chat_summaries m
                     where m.chat_id = r.chat_id and m.level = case r.kind when 'chunk' then 0 else 1 end
                       and m.start_seq = r.s and m.end_seq = r.e)
           end
    from top b join ranked r on r.chat_id = b.chat_id and r.text_rank <= greatest(p_texts_per_chat, 1)
    order by b.chat_rank, r.text_rank;
end $$;
