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

create or replace function public.parla_schema_version() returns integer
language sql immutable as $$ select 18 $$;
