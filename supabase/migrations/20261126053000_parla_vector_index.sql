-- Vector indexes for a heavy user's history (100,000+ embedded texts): an exact scan of every
-- vector per spoken switch grew with the history. Each table's vectors get a pgvector HNSW index:
--
-- * Built without blocking writes (`create index concurrently`). Such a statement cannot run in a
--   transaction, so this file starts with them alone: the Supabase CLI runs them outside the
--   migration's transaction (CLI >= 2.109, supabase/cli#5671), `parla db migrate` likewise
--   (memory/store/supabase_schema.py). The whole file can be run again after a failure (`if not
--   exists`, `or replace`).
-- * The columns have no fixed dimension (it follows the user's embedder), and HNSW needs one: one
--   partial expression index per dimension Parla's embedders use (256 offline; 768, 1536 and 3072,
--   the sizes gemini-embedding-001 recommends), the pattern of pgvector's README ("Indexing
--   different dimensions", https://github.com/pgvector/pgvector#can-i-store-vectors-with-different-dimensions-in-the-same-column).
--   Another dimension is still searched, by an exact scan.
-- * At half precision (`halfvec`, "Half-precision indexing" in the same README,
--   https://docs.pgedge.com/pgvector/v0-8-1/half-precision-indexing/): the index is half the size,
--   and the few best chats it proposes are then ranked by the stored full-precision vectors, so
--   results do not change.
-- * One index serves every user, and a search keeps only the caller's rows: pgvector >= 0.8's
--   iterative index scans (`hnsw.iterative_scan`, https://docs.pgedge.com/pgvector/v0-8-0/iterative-index-scans/)
--   keep reading the index until enough of them are found; when a user's rows are rare the
--   planner takes the btree on user_id and an exact sort instead.

create index concurrently if not exists chat_windows_hnsw_256 on public.chat_windows
    using hnsw ((embedding::extensions.halfvec(256)) extensions.halfvec_cosine_ops)
    where extensions.vector_dims(embedding) = 256;
create index concurrently if not exists chat_windows_hnsw_768 on public.chat_windows
    using hnsw ((embedding::extensions.halfvec(768)) extensions.halfvec_cosine_ops)
    where extensions.vector_dims(embedding) = 768;
create index concurrently if not exists chat_windows_hnsw_1536 on public.chat_windows
    using hnsw ((embedding::extensions.halfvec(1536)) extensions.halfvec_cosine_ops)
    where extensions.vector_dims(embedding) = 1536;
create index concurrently if not exists chat_windows_hnsw_3072 on public.chat_windows
    using hnsw ((embedding::extensions.halfvec(3072)) extensions.halfvec_cosine_ops)
    where extensions.vector_dims(embedding) = 3072;
create index concurrently if not exists chat_summaries_hnsw_256 on public.chat_summaries
    using hnsw ((embedding::extensions.halfvec(256)) extensions.halfvec_cosine_ops)
    where extensions.vector_dims(embedding) = 256;
create index concurrently if not exists chat_summaries_hnsw_768 on public.chat_summaries
    using hnsw ((embedding::extensions.halfvec(768)) extensions.halfvec_cosine_ops)
    where extensions.vector_dims(embedding) = 768;
create index concurrently if not exists chat_summaries_hnsw_1536 on public.chat_summaries
    using hnsw ((embedding::extensions.halfvec(1536)) extensions.halfvec_cosine_ops)
    where extensions.vector_dims(embedding) = 1536;
create index concurrently if not exists chat_summaries_hnsw_3072 on public.chat_summaries
    using hnsw ((embedding::extensions.halfvec(3072)) extensions.halfvec_cosine_ops)
    where extensions.vector_dims(embedding) = 3072;
create index concurrently if not exists chat_facts_hnsw_256 on public.chat_facts
    using hnsw ((embedding::extensions.halfvec(256)) extensions.halfvec_cosine_ops)
    where extensions.vector_dims(embedding) = 256;
create index concurrently if not exists chat_facts_hnsw_768 on public.chat_facts
    using hnsw ((embedding::extensions.halfvec(768)) extensions.halfvec_cosine_ops)
    where extensions.vector_dims(embedding) = 768;
create index concurrently if not exists chat_facts_hnsw_1536 on public.chat_facts
    using hnsw ((embedding::extensions.halfvec(1536)) extensions.halfvec_cosine_ops)
    where extensions.vector_dims(embedding) = 1536;
create index concurrently if not exists chat_facts_hnsw_3072 on public.chat_facts
    using hnsw ((embedding::extensions.halfvec(3072)) extensions.halfvec_cosine_ops)
    where extensions.vector_dims(embedding) = 3072;
create index concurrently if not exists chats_hnsw_256 on public.chats
    using hnsw ((summary_embedding::extensions.halfvec(256)) extensions.halfvec_cosine_ops)
    where extensions.vector_dims(summary_embedding) = 256;
create index concurrently if not exists chats_hnsw_768 on public.chats
    using hnsw ((summary_embedding::extensions.halfvec(768)) extensions.halfvec_cosine_ops)
    where extensions.vector_dims(summary_embedding) = 768;
create index concurrently if not exists chats_hnsw_1536 on public.chats
    using hnsw ((summary_embedding::extensions.halfvec(1536)) extensions.halfvec_cosine_ops)
    where extensions.vector_dims(summary_embedding) = 1536;
create index concurrently if not exists chats_hnsw_3072 on public.chats
    using hnsw ((summary_embedding::extensions.halfvec(3072)) extensions.halfvec_cosine_ops)
    where extensions.vector_dims(summary_embedding) = 3072;

-- The p_count chats whose best text is nearest to p_query by the indexes (half precision, in
-- approximate order), among the caller's texts made by p_embedder. The dimension is written into
-- the statement so the planner can match the partial indexes.
create or replace function parla.candidate_chats(p_uid uuid, p_query extensions.vector, p_embedder text, p_count integer)
returns table (chat_id uuid)
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
            (select w.chat_id, w.embedding::halfvec(%1$s) <=> $2::halfvec(%1$s) as d from public.chat_windows w
             where w.user_id = $1 and vector_dims(w.embedding) = %1$s and w.embedder = $3
             order by w.embedding::halfvec(%1$s) <=> $2::halfvec(%1$s) limit $4)
            union all
            (select m.chat_id, m.embedding::halfvec(%1$s) <=> $2::halfvec(%1$s) from public.chat_summaries m
             where m.user_id = $1 and vector_dims(m.embedding) = %1$s and m.embedder = $3
             order by m.embedding::halfvec(%1$s) <=> $2::halfvec(%1$s) limit $4)
            union all
            (select f.chat_id, f.embedding::halfvec(%1$s) <=> $2::halfvec(%1$s) from public.chat_facts f
             where f.user_id = $1 and vector_dims(f.embedding) = %1$s and f.embedder = $3
             order by f.embedding::halfvec(%1$s) <=> $2::halfvec(%1$s) limit $4)
            union all
            (select c.id, c.summary_embedding::halfvec(%1$s) <=> $2::halfvec(%1$s) from public.chats c
             where c.user_id = $1 and vector_dims(c.summary_embedding) = %1$s and c.summary_embedder = $3
             order by c.summary_embedding::halfvec(%1$s) <=> $2::halfvec(%1$s) limit $4)
        )
        select n.chat_id from near n group by n.chat_id order by min(n.d), n.chat_id limit $4
    $sql$, v_dim) using p_uid, p_query, p_embedder, p_count;
end $$;

-- As before, but the texts compared exactly are those of the chats the indexes propose (five times
-- the chats asked for, at least 100), and only texts of the store's embedder (a re-embed in pages
-- writes the new vectors before the store switches to them).
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
    from parla.candidate_chats(v_uid, query_embedding, v_embedder, greatest(5 * match_count, 100)) n;
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

-- Recall inside one chat, as before, keeping to the texts of the store's embedder (during a
-- re-embed in pages a chat holds vectors of both, perhaps of two sizes).
create or replace function public.search_chat_texts(
    p_chat_id uuid, query_embedding extensions.vector, match_count integer default 20,
    p_embedder text default null, p_user_id uuid default null
) returns jsonb
language plpgsql stable security invoker set search_path = pg_catalog, public, extensions as $$
declare
    v_uid uuid := parla.owner_id(p_user_id);
    v_embedder text;
begin
    if match_count <= 0 or not parla.query_fits(v_uid, p_embedder, query_embedding) then
        return '[]'::jsonb;
    end if;
    select e.embedder into v_embedder from public.memory_embedders e where e.user_id = v_uid;
    return coalesce((
        select jsonb_agg(jsonb_build_object('matched_kind', t.kind, 'start_seq', t.s, 'end_seq', t.e,
                                            'similarity', t.sim, 'matched_text', t.body)
                         order by t.sim desc, t.kind, t.s)
        from (
            select * from (
                select 'summary'::text as kind, 0 as s, 0 as e, 1 - (c.summary_embedding <=> query_embedding) as sim,
                       c.summary_text as body
                from public.chats c
                where c.user_id = v_uid and c.id = p_chat_id and c.summary_embedder = v_embedder
                union all
                select case m.level when 0 then 'chunk' else 'meta' end, m.start_seq, m.end_seq,
                       1 - (m.embedding <=> query_embedding), m.summary
                from public.chat_summaries m
                where m.user_id = v_uid and m.chat_id = p_chat_id and m.embedder = v_embedder
                union all
                select 'facts', f.start_seq, f.end_seq, 1 - (f.embedding <=> query_embedding), f.facts
                from public.chat_facts f
                where f.user_id = v_uid and f.chat_id = p_chat_id and f.embedder = v_embedder
                union all
                select 'turns', w.start_seq, w.end_seq, 1 - (w.embedding <=> query_embedding), w.body
                from public.chat_windows w
                where w.user_id = v_uid and w.chat_id = p_chat_id and w.embedder = v_embedder
            ) a
            order by a.sim desc, a.kind, a.s
            limit match_count
        ) t), '[]'::jsonb);
end $$;

-- Every staged vector has the same dimension (checked page by page, so committing need not read
-- them all again).
create or replace function public.stage_embeddings(
    p_items jsonb, p_embedder text, p_reset boolean default false, p_user_id uuid default null
) returns integer
language plpgsql volatile security invoker set search_path = pg_catalog, public, extensions as $$
declare
    v_uid uuid := parla.owner_id(p_user_id);
    v_dims integer[];
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
    select array_agg(distinct d) into v_dims from (
        select jsonb_array_length(i->'embedding') as d from jsonb_array_elements(coalesce(p_items, '[]'::jsonb)) i
        union
        (select vector_dims(p.embedding) from parla.pending_embeddings p where p.user_id = v_uid limit 1)
    ) dims;
    if coalesce(array_length(v_dims, 1), 0) > 1 then
        raise exception 'vectors of several dimensions given: %', v_dims
            using errcode = 'P0001', detail = 'embedder_mismatch';
    end if;
    insert into parla.pending_embeddings (user_id, embedder, chat_id, kind, start_seq, end_seq, embedding)
    select v_uid, p_embedder, i.chat_id, i.kind, i.start_seq, i.end_seq, i.embedding::text::extensions.vector
    from jsonb_to_recordset(coalesce(p_items, '[]'::jsonb))
        as i(chat_id uuid, kind text, start_seq integer, end_seq integer, embedding jsonb)
    on conflict (user_id, chat_id, kind, start_seq, end_seq) do update set embedding = excluded.embedding;
    return (select count(*) from parla.pending_embeddings where user_id = v_uid);
end $$;

-- How many of the caller's embedded texts have a vector made by another embedder than p_embedder.
create or replace function parla.texts_not_embedded_by(p_uid uuid, p_embedder text) returns bigint
language sql stable security invoker set search_path = pg_catalog, public as $$
    select (select count(*) from public.chats
            where user_id = p_uid and summary_embedding is not null and summary_embedder <> p_embedder)
         + (select count(*) from public.chat_summaries where user_id = p_uid and embedder <> p_embedder)
         + (select count(*) from public.chat_facts
            where user_id = p_uid and embedding is not null and embedder <> p_embedder)
         + (select count(*) from public.chat_windows where user_id = p_uid and embedder <> p_embedder)
$$;

-- Writes staged vectors in pages, each call (one request, one transaction) at most p_page of them
-- (all when null), so a heavy history stays under PostgREST's statement timeout, with its index
-- upkeep. Searches keep to the old embedder's vectors until the call that writes the last page
-- records the new embedder. Refuses when a text would keep its old vector. Returns how many
-- staged vectors are left.
drop function if exists public.commit_embeddings(text, uuid);
create or replace function public.commit_embeddings(p_embedder text, p_page integer default null, p_user_id uuid default null)
returns integer
language plpgsql volatile security invoker set search_path = pg_catalog, public, extensions as $$
declare
    v_uid uuid := parla.owner_id(p_user_id);
    v_left bigint := coalesce(p_page, 2147483647);
    v_staged bigint;
    v_taken bigint;
    v_dim integer;
begin
    select count(*) into v_staged from parla.pending_embeddings where user_id = v_uid and embedder = p_embedder;
    if parla.texts_not_embedded_by(v_uid, p_embedder) > v_staged then
        raise exception '% embedded texts would be left with old vectors',
            parla.texts_not_embedded_by(v_uid, p_embedder) - v_staged
            using errcode = 'P0001', detail = 'bad_input', hint = 'embed every text from embedded_texts()';
    end if;
    -- one page of staged vectors leaves the staging table and each goes to its text's row (each
    -- update below runs whether or not it is read)
    with page as (
        delete from parla.pending_embeddings p
        where (p.user_id, p.chat_id, p.kind, p.start_seq, p.end_seq) in (
            select s.user_id, s.chat_id, s.kind, s.start_seq, s.end_seq from parla.pending_embeddings s
            where s.user_id = v_uid and s.embedder = p_embedder limit v_left)
        returning p.*
    ), windows as (
        update public.chat_windows w set embedding = s.embedding, embedder = p_embedder
        from page s
        where s.kind = 'turns' and w.chat_id = s.chat_id and w.user_id = v_uid and w.start_seq = s.start_seq
    ), summaries as (
        update public.chat_summaries m set embedding = s.embedding, embedder = p_embedder
        from page s
        where s.kind in ('chunk', 'meta') and m.chat_id = s.chat_id and m.user_id = v_uid
          and m.level = case s.kind when 'chunk' then 0 else 1 end
          and m.start_seq = s.start_seq and m.end_seq = s.end_seq
    ), facts as (
        update public.chat_facts f set embedding = s.embedding, embedder = p_embedder
        from page s
        where s.kind = 'facts' and f.chat_id = s.chat_id and f.user_id = v_uid
          and f.start_seq = s.start_seq and f.end_seq = s.end_seq
    ), described as (
        update public.chats c set summary_embedding = s.embedding, summary_embedder = p_embedder
        from page s where s.kind = 'summary' and c.id = s.chat_id and c.user_id = v_uid
    )
    select count(*) into v_taken from page;
    select count(*) into v_staged from parla.pending_embeddings where user_id = v_uid and embedder = p_embedder;
    if v_staged > 0 then
        return v_staged;
    end if;
    -- the last page: every text now has a vector of p_embedder, so searches may use them
    v_dim := coalesce(
        (select vector_dims(w.embedding) from public.chat_windows w where w.user_id = v_uid limit 1),
        (select vector_dims(m.embedding) from public.chat_summaries m where m.user_id = v_uid limit 1),
        (select vector_dims(f.embedding) from public.chat_facts f
         where f.user_id = v_uid and f.embedding is not null limit 1),
        (select vector_dims(c.summary_embedding) from public.chats c
         where c.user_id = v_uid and c.summary_embedding is not null limit 1));
    if v_dim is not null then
        insert into public.memory_embedders (user_id, embedder, dim) values (v_uid, p_embedder, v_dim)
        on conflict (user_id) do update set embedder = excluded.embedder, dim = excluded.dim;
    end if;
    delete from parla.pending_embeddings where user_id = v_uid;
    return 0;
end $$;

revoke all on function parla.candidate_chats, parla.texts_not_embedded_by, public.commit_embeddings
    from public, anon;
grant execute on function parla.candidate_chats, parla.texts_not_embedded_by, public.commit_embeddings
    to authenticated, service_role;

create or replace function public.parla_schema_version() returns integer
language sql immutable as $$ select 15 $$;
