-- A check of each HNSW index against an exact scan, run after the indexes are built (see the
-- function's comment). Its own migration, after the index builds of 20261126054000 and
-- 20261126055000, which stay as shipped.

-- How well an HNSW index finds the nearest rows, checked after it is built: a build on a clustered
-- history can leave a region of the graph unreached (20261126055000_parla_vector_index_links.sql),
-- which only another build mends. For p_sample stored vectors of the index's rows, each taken as a query, the share of the index's
-- p_k nearest rows that an exact scan of the same rows also has among its p_k nearest (a row at
-- the exact p_k-th distance counts: the history repeats sentences), with the ef_search the
-- searches use. Null when the index has no rows. memory/store/supabase/schema.py calls it after
-- `parla db migrate` builds indexes, and builds an index again (REINDEX CONCURRENTLY, which no
-- function may run) while it falls short.
-- The function sets hnsw.ef_search, which Postgres lets a role other than the superuser set only
-- once pgvector's library has defined it in this session: a call into the library loads it (in a
-- session that has not touched a vector yet, such as a project migrated from schema 18).
select extensions.vector_dims('[1]'::extensions.vector);

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
language sql immutable as $$ select 19 $$;
