-- Searches at a heavy user's size (5,000 chats, 190,000 embedded texts). The vector search: the
-- chats the HNSW indexes propose are ranked by the texts the indexes found, compared at full
-- precision. Recall by words: each turn scored on its own (at the end of this file).
--
-- Before, the indexes' 100 nearest texts of each table named up to 100 candidate chats (ordered by
-- the half-precision distance), and every text of five times the chats asked for was then
-- compared exactly. That missed 1.4-1.6% of the exact top 10 chats at 5,000 chats: the history
-- repeats sentences, so a hundred windows or more can lie at one distance from a request, and
-- chats tied with the 10th were past the cut. It also compared every text of 200 chats (7,000
-- vectors) for a switch search.
--
-- Now each index is read further (400 texts, or ten per chat asked for; pgvector >= 0.8's
-- iterative scans keep reading past hnsw.ef_search until that many of the caller's rows are
-- found, https://docs.pgedge.com/pgvector/v0-8-0/iterative-index-scans/), each text found is
-- compared at full precision as it is read, and the chats are ordered by their best such text.
-- Twice the chats asked for (a chat's best text may not be among those found) have all their
-- texts compared exactly, as before, and the best of them are the answer.
--
-- The indexes (20261126054000_parla_vector_index.sql) come after this file: a statement that names
-- them is only planned when it runs.

drop function if exists parla.candidate_chats(uuid, extensions.vector, text, integer);

-- candidate_chats sets hnsw.ef_search, which a role other than the superuser may set only once
-- pgvector's library has defined it in this session: a call into the library loads it (a
-- project migrated in a session that has not touched a vector yet).
select extensions.vector_dims('[1]'::extensions.vector);

-- The p_count chats whose nearest text among the indexes' p_texts nearest of each table (the
-- caller's texts made by p_embedder) is nearest at full precision, best first. The dimension is
-- written into the statement so the planner can match the partial indexes.
create or replace function parla.candidate_chats(
    p_uid uuid, p_query extensions.vector, p_embedder text, p_texts integer, p_count integer
) returns table (chat_id uuid)
language plpgsql stable security invoker
set search_path = pg_catalog, public, extensions
set hnsw.iterative_scan = 'relaxed_order'
set hnsw.ef_search = 200
as $$
declare
    v_dim integer := vector_dims(p_query);
begin
    return query execute format($sql$
        with near as materialized (
            (select w.chat_id, w.embedding <=> $2 as d from public.chat_windows w
             where w.user_id = $1 and vector_dims(w.embedding) = %1$s and w.embedder = $3
             order by w.embedding::halfvec(%1$s) <=> $2::halfvec(%1$s) limit $4)
            union all
            (select m.chat_id, m.embedding <=> $2 from public.chat_summaries m
             where m.user_id = $1 and vector_dims(m.embedding) = %1$s and m.embedder = $3
             order by m.embedding::halfvec(%1$s) <=> $2::halfvec(%1$s) limit $4)
            union all
            (select f.chat_id, f.embedding <=> $2 from public.chat_facts f
             where f.user_id = $1 and vector_dims(f.embedding) = %1$s and f.embedder = $3
             order by f.embedding::halfvec(%1$s) <=> $2::halfvec(%1$s) limit $4)
            union all
            (select c.id, c.summary_embedding <=> $2 from public.chats c
             where c.user_id = $1 and vector_dims(c.summary_embedding) = %1$s and c.summary_embedder = $3
             order by c.summary_embedding::halfvec(%1$s) <=> $2::halfvec(%1$s) limit $4)
        )
        select n.chat_id from near n group by n.chat_id order by min(n.d), n.chat_id limit $5
    $sql$, v_dim) using p_uid, p_query, p_embedder, p_texts, p_count;
end $$;

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
    v_embedder text;
    v_near uuid[];
begin
    if match_count <= 0 or not parla.query_fits(v_uid, p_embedder, query_embedding) then
        return;
    end if;
    select e.embedder into v_embedder from public.memory_embedders e where e.user_id = v_uid;
    select array_agg(n.chat_id) into v_near
    from parla.candidate_chats(v_uid, query_embedding, v_embedder, greatest(10 * match_count, 400), 2 * match_count) n;
    return query
    with texts as (
        select c.id as chat_id, 'summary'::text as kind, 0 as s, 0 as e,
               1 - (c.summary_embedding <=> query_embedding) as sim
        from public.chats c
        where c.user_id = v_uid and c.id = any (v_near) and c.summary_embedder = v_embedder
        union all
        select m.chat_id, case m.level when 0 then 'chunk' else 'meta' end, m.start_seq, m.end_seq,
               1 - (m.embedding <=> query_embedding)
        from public.chat_summaries m
        where m.user_id = v_uid and m.chat_id = any (v_near) and m.embedder = v_embedder
        union all
        select f.chat_id, 'facts', f.start_seq, f.end_seq, 1 - (f.embedding <=> query_embedding)
        from public.chat_facts f
        where f.user_id = v_uid and f.chat_id = any (v_near) and f.embedder = v_embedder
        union all
        select w.chat_id, 'turns', w.start_seq, w.end_seq, 1 - (w.embedding <=> query_embedding)
        from public.chat_windows w
        where w.user_id = v_uid and w.chat_id = any (v_near) and w.embedder = v_embedder
    ),
    best as (
        select t.chat_id, max(t.sim) as sim from texts t group by t.chat_id
    ),
    top as (
        select b.chat_id, b.sim, c.title, c.created_at, c.last_activity_at,
               row_number() over (order by b.sim desc, c.last_activity_at desc, b.chat_id) as chat_rank
        from best b join public.chats c on c.id = b.chat_id
        order by b.sim desc, c.last_activity_at desc, b.chat_id
        limit match_count
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

revoke all on function parla.candidate_chats from public, anon;
grant execute on function parla.candidate_chats to authenticated, service_role;

-- Recall by words: each turn's score is summed beside its row. Before, the terms of every turn
-- holding a word were sorted together by turn and word for one grouped sum (65,000 rows for
-- 8,500 turns at 5,000 chats, past work_mem: 400 of its 665 ms sorting on disk, by EXPLAIN
-- ANALYZE). The sum adds a turn's terms in the order of its words, as before, so the scores are
-- the same to the bit.
create or replace function parla.turn_scores(
    p_uid uuid, p_chat_id uuid, p_words text[], p_idf numeric[], p_hold text[], p_avg double precision,
    p_count integer
) returns table (chat_id uuid, seq integer, score double precision)
language sql stable security invoker set search_path = pg_catalog, public as $$
    select t.chat_id, t.seq, s.score
    from public.chat_turns t
    cross join lateral (
        select sum(w.idf * (cardinality(x.positions) * 2.2)
                   / (cardinality(x.positions) + 1.2 * (0.25 + 0.75 * t.word_count / greatest(p_avg, 1)))
                   order by x.lexeme) as score
        from unnest(ts_filter(setweight(t.words, 'A', p_words), '{a}')) x
        join unnest(p_words, p_idf) w(word, idf) on w.word = x.lexeme
    ) s
    where t.user_id = p_uid and (p_chat_id is null or t.chat_id = p_chat_id)
      and t.words @@ (select string_agg(quote_literal(h), ' | ')::tsquery from unnest(p_hold) h)
      and s.score is not null
    order by s.score desc, t.chat_id, t.seq
    limit p_count
$$;
