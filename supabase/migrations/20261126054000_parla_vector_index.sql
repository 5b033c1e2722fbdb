-- Vector indexes for a heavy user's history (100,000+ embedded texts): an exact scan of every
-- vector per spoken switch grew with the history. Each table's vectors get a pgvector HNSW index:
--
-- * Built without blocking writes (`create index concurrently`). Such a statement cannot run in a
--   transaction, so this file starts with them alone: the Supabase CLI runs them outside the
--   migration's transaction (CLI >= 2.109, supabase/cli#5671), `parla db migrate` likewise
--   (memory/store/supabase/schema.py). The whole file can be run again after a failure (`if not
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

-- The search that asks these indexes (public.search_chats_semantic and parla.candidate_chats) is
-- in 20261126053500_parla_near_texts.sql.

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

revoke all on function parla.texts_not_embedded_by, public.commit_embeddings from public, anon;
grant execute on function parla.texts_not_embedded_by, public.commit_embeddings to authenticated, service_role;

create or replace function public.parla_schema_version() returns integer
language sql immutable as $$ select 16 $$;
