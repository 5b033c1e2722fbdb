-- (Renumbered from 20261126055000 to stay the last migration: a project that applied it under
-- that version runs it again, and finds every index built: nothing is rebuilt.)
-- The HNSW indexes of 20261126054000_parla_vector_index.sql built again with more links per
-- element (m = 32, twice the default) and a wider search while building (ef_construction = 256,
-- four times it). With the defaults, at 5,000 chats and 768 dims, a build could leave whole
-- regions of the history unreached: "the leash for my beagle who will not stop barking" got facts
-- at cosine distance 0.16 when 0.09 existed, whatever hnsw.ef_search or iterative scan was set,
-- and top-10 agreement with an exact scan was 0.937-0.962 over three builds. The history is
-- strongly clustered (chats on one subject repeat sentences word for word; pgvector keeps at most
-- 10 identical vectors in one element, https://github.com/pgvector/pgvector/issues/632, and "the
-- HNSW algorithm is not designed for a large percentage of duplicate vectors",
-- https://github.com/pgvector/pgvector/issues/837). pgvector's README ("Index Options",
-- https://github.com/pgvector/pgvector#index-options): m is the most links an element has per
-- layer, and a higher ef_construction gives better recall at the cost of build time and insert
-- speed. Measured on those 5,000 chats at 768 dims: agreement 0.987, 1.000 and 1.000 over three
-- builds (docs/design/scale.md, "Supabase"). Built under new names without blocking writes, then
-- the old indexes are dropped, so a project that has them is rebuilt too.
create index concurrently if not exists chat_windows_hnsw_256_m32 on public.chat_windows
    using hnsw ((embedding::extensions.halfvec(256)) extensions.halfvec_cosine_ops) with (m = 32, ef_construction = 256)
    where extensions.vector_dims(embedding) = 256;
create index concurrently if not exists chat_windows_hnsw_768_m32 on public.chat_windows
    using hnsw ((embedding::extensions.halfvec(768)) extensions.halfvec_cosine_ops) with (m = 32, ef_construction = 256)
    where extensions.vector_dims(embedding) = 768;
create index concurrently if not exists chat_windows_hnsw_1536_m32 on public.chat_windows
    using hnsw ((embedding::extensions.halfvec(1536)) extensions.halfvec_cosine_ops) with (m = 32, ef_construction = 256)
    where extensions.vector_dims(embedding) = 1536;
create index concurrently if not exists chat_windows_hnsw_3072_m32 on public.chat_windows
    using hnsw ((embedding::extensions.halfvec(3072)) extensions.halfvec_cosine_ops) with (m = 32, ef_construction = 256)
    where extensions.vector_dims(embedding) = 3072;
create index concurrently if not exists chat_summaries_hnsw_256_m32 on public.chat_summaries
    using hnsw ((embedding::extensions.halfvec(256)) extensions.halfvec_cosine_ops) with (m = 32, ef_construction = 256)
    where extensions.vector_dims(embedding) = 256;
create index concurrently if not exists chat_summaries_hnsw_768_m32 on public.chat_summaries
    using hnsw ((embedding::extensions.halfvec(768)) extensions.halfvec_cosine_ops) with (m = 32, ef_construction = 256)
    where extensions.vector_dims(embedding) = 768;
create index concurrently if not exists chat_summaries_hnsw_1536_m32 on public.chat_summaries
    using hnsw ((embedding::extensions.halfvec(1536)) extensions.halfvec_cosine_ops) with (m = 32, ef_construction = 256)
    where extensions.vector_dims(embedding) = 1536;
create index concurrently if not exists chat_summaries_hnsw_3072_m32 on public.chat_summaries
    using hnsw ((embedding::extensions.halfvec(3072)) extensions.halfvec_cosine_ops) with (m = 32, ef_construction = 256)
    where extensions.vector_dims(embedding) = 3072;
create index concurrently if not exists chat_facts_hnsw_256_m32 on public.chat_facts
    using hnsw ((embedding::extensions.halfvec(256)) extensions.halfvec_cosine_ops) with (m = 32, ef_construction = 256)
    where extensions.vector_dims(embedding) = 256;
create index concurrently if not exists chat_facts_hnsw_768_m32 on public.chat_facts
    using hnsw ((embedding::extensions.halfvec(768)) extensions.halfvec_cosine_ops) with (m = 32, ef_construction = 256)
    where extensions.vector_dims(embedding) = 768;
create index concurrently if not exists chat_facts_hnsw_1536_m32 on public.chat_facts
    using hnsw ((embedding::extensions.halfvec(1536)) extensions.halfvec_cosine_ops) with (m = 32, ef_construction = 256)
    where extensions.vector_dims(embedding) = 1536;
create index concurrently if not exists chat_facts_hnsw_3072_m32 on public.chat_facts
    using hnsw ((embedding::extensions.halfvec(3072)) extensions.halfvec_cosine_ops) with (m = 32, ef_construction = 256)
    where extensions.vector_dims(embedding) = 3072;
create index concurrently if not exists chats_hnsw_256_m32 on public.chats
    using hnsw ((summary_embedding::extensions.halfvec(256)) extensions.halfvec_cosine_ops) with (m = 32, ef_construction = 256)
    where extensions.vector_dims(summary_embedding) = 256;
create index concurrently if not exists chats_hnsw_768_m32 on public.chats
    using hnsw ((summary_embedding::extensions.halfvec(768)) extensions.halfvec_cosine_ops) with (m = 32, ef_construction = 256)
    where extensions.vector_dims(summary_embedding) = 768;
create index concurrently if not exists chats_hnsw_1536_m32 on public.chats
    using hnsw ((summary_embedding::extensions.halfvec(1536)) extensions.halfvec_cosine_ops) with (m = 32, ef_construction = 256)
    where extensions.vector_dims(summary_embedding) = 1536;
create index concurrently if not exists chats_hnsw_3072_m32 on public.chats
    using hnsw ((summary_embedding::extensions.halfvec(3072)) extensions.halfvec_cosine_ops) with (m = 32, ef_construction = 256)
    where extensions.vector_dims(summary_embedding) = 3072;

drop index if exists public.chat_windows_hnsw_256;
drop index if exists public.chat_windows_hnsw_768;
drop index if exists public.chat_windows_hnsw_1536;
drop index if exists public.chat_windows_hnsw_3072;
drop index if exists public.chat_summaries_hnsw_256;
drop index if exists public.chat_summaries_hnsw_768;
drop index if exists public.chat_summaries_hnsw_1536;
drop index if exists public.chat_summaries_hnsw_3072;
drop index if exists public.chat_facts_hnsw_256;
drop index if exists public.chat_facts_hnsw_768;
drop index if exists public.chat_facts_hnsw_1536;
drop index if exists public.chat_facts_hnsw_3072;
drop index if exists public.chats_hnsw_256;
drop index if exists public.chats_hnsw_768;
drop index if exists public.chats_hnsw_1536;
drop index if exists public.chats_hnsw_3072;

-- How well an HNSW index finds the nearest rows, checked after it is built: a build on a clustered
-- history can leave a region of the graph unreached (above), which only another build mends. For
-- p_sample stored vectors of the index's rows, each taken as a query, the share of the index's
-- p_k nearest rows that an exact scan of the same rows also has among its p_k nearest (a row at
-- the exact p_k-th distance counts: the history repeats sentences), with the ef_search the
-- searches use. Null when the index has no rows. memory/store/supabase_schema.py calls it after
-- `parla db migrate` builds indexes, and builds an index again (REINDEX CONCURRENTLY, which no
-- function may run) while it falls short.
create or replace function parla.vector_index_agreement(p_index regclass, p_sample integer, p_k integer)
returns double precision
language plpgsql volatile security invoker
set search_path = pg_catalog, public, extensions
set hnsw.ef_search = 200
set enable_seqscan = on
set enable_indexscan = on
set enable_bitmapscan = on
as $$
declare
    v_table regclass;
    v_expr text;
    v_pred text;
    v_type text;
    v_query text;
    v_nearest text; -- the statement of a query's p_k nearest distances, by whatever plan is allowed
    v_found double precision[];
    v_exact double precision[];
    v_sum double precision := 0;
    v_n integer := 0;
begin
    select i.indrelid::regclass, pg_get_indexdef(i.indexrelid, 1, true), pg_get_expr(i.indpred, i.indrelid),
           format_type(a.atttypid, a.atttypmod)
    into v_table, v_expr, v_pred, v_type
    from pg_index i join pg_attribute a on a.attrelid = i.indexrelid and a.attnum = 1
    where i.indexrelid = p_index;
    v_nearest := format('select array_agg(s.d order by s.d) from (select (%1$s) <=> $1::%2$s as d from %3$s '
                        'where %4$s order by (%1$s) <=> $1::%2$s limit %5$s) s',
                        v_expr, v_type, v_table, coalesce(v_pred, 'true'), p_k);
    for v_query in execute format('select (%s)::text from %s where %s order by random() limit %s',
                                  v_expr, v_table, coalesce(v_pred, 'true'), p_sample) loop
        perform set_config('enable_seqscan', 'off', true); -- the index
        execute v_nearest into v_found using v_query;
        perform set_config('enable_seqscan', 'on', true); -- every row
        perform set_config('enable_indexscan', 'off', true);
        perform set_config('enable_bitmapscan', 'off', true);
        execute v_nearest into v_exact using v_query;
        perform set_config('enable_indexscan', 'on', true);
        perform set_config('enable_bitmapscan', 'on', true);
        v_sum := v_sum + (select count(*) from unnest(coalesce(v_found, '{}')) f
                          where f <= v_exact[cardinality(v_exact)] + 1e-6)::double precision / cardinality(v_exact);
        v_n := v_n + 1;
    end loop;
    return case when v_n > 0 then v_sum / v_n end;
end $$;

revoke all on function parla.vector_index_agreement from public, anon, authenticated;
grant execute on function parla.vector_index_agreement to service_role;

create or replace function public.parla_schema_version() returns integer
language sql immutable as $$ select 18 $$;
