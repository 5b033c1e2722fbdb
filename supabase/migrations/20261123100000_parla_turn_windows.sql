-- What was said, indexed for search: windows of a chat's raw turns, each with its text, its
-- distinct words and its vector, and per user the number of windows each word occurs in (the
-- empty word counts every window), kept by a trigger so deletes by cascade count too. The search
-- returns each of the best chats with its few most similar texts, for the client's second stage
-- (the request's words weighted by their rarity), which is the same code for both stores.
--
-- Still no approximate index: a search is confined to one user's rows and needs each chat's best
-- texts exactly; one user's exact scan is measured in the README (bench.switch).

create table public.chat_windows (
    chat_id uuid not null,
    user_id uuid not null default auth.uid(),
    start_seq integer not null,
    end_seq integer not null,
    body text not null,
    words text[] not null,
    embedding extensions.vector not null,
    embedder text not null,
    primary key (chat_id, start_seq),
    check (1 <= start_seq and start_seq <= end_seq),
    foreign key (chat_id, user_id) references public.chats (id, user_id) on delete cascade
);
create index chat_windows_user on public.chat_windows (user_id);

create table public.window_words (
    user_id uuid not null default auth.uid() references auth.users (id) on delete cascade,
    word text not null,
    windows integer not null check (windows >= 0),
    primary key (user_id, word)
);

alter table public.chat_windows enable row level security;
alter table public.window_words enable row level security;
create policy chat_windows_owner on public.chat_windows for all to authenticated
    using (user_id = (select auth.uid())) with check (user_id = (select auth.uid()));
create policy window_words_owner on public.window_words for all to authenticated
    using (user_id = (select auth.uid())) with check (user_id = (select auth.uid()));
grant select, insert, update, delete on public.chat_windows, public.window_words to authenticated, service_role;

create function parla.count_window_words() returns trigger
language plpgsql volatile security invoker set search_path = pg_catalog, public as $$
begin
    if tg_op in ('DELETE', 'UPDATE') then
        update public.window_words w set windows = w.windows - 1
        where w.user_id = old.user_id and w.word = any (array_prepend('', old.words));
    end if;
    if tg_op in ('INSERT', 'UPDATE') then
        insert into public.window_words (user_id, word, windows)
        select new.user_id, x, 1 from unnest(array_prepend('', new.words)) as x order by x
        on conflict (user_id, word) do update set windows = public.window_words.windows + 1;
    end if;
    return null;
end $$;
create trigger chat_windows_counted after insert or update or delete on public.chat_windows
    for each row execute function parla.count_window_words();

-- The first turn whose window of p_size turns is not stored whole yet (1 when none is).
create function public.window_frontier(p_chat_id uuid, p_size integer, p_user_id uuid default null)
returns integer
language plpgsql stable security invoker set search_path = pg_catalog, public as $$
declare
    v_uid uuid := parla.owner_id(p_user_id);
begin
    if not exists (select 1 from public.chats where id = p_chat_id and user_id = v_uid) then
        raise exception 'no chat %', p_chat_id using errcode = 'P0001', detail = 'chat_not_found';
    end if;
    return coalesce((
        select max(w.start_seq) from public.chat_windows w
        where w.chat_id = p_chat_id and w.user_id = v_uid and w.end_seq - w.start_seq + 1 >= p_size
    ), 0) + 1;
end $$;

-- Stores windows by their first turn, replacing a shorter one, in one transaction.
-- p_windows: [{start_seq, end_seq, body, words, embedding, embedder}].
create function public.upsert_windows(p_chat_id uuid, p_windows jsonb, p_user_id uuid default null)
returns integer
language plpgsql volatile security invoker set search_path = pg_catalog, public, extensions as $$
declare
    v_uid uuid := parla.owner_id(p_user_id);
    v_window record;
    v_count integer := 0;
begin
    perform parla.locked_chat(v_uid, p_chat_id);
    for v_window in
        select i.start_seq, i.end_seq, i.body, i.words, i.embedding::text::extensions.vector as embedding, i.embedder
        from jsonb_to_recordset(coalesce(p_windows, '[]'::jsonb))
            as i(start_seq integer, end_seq integer, body text, words text[], embedding jsonb, embedder text)
        order by i.start_seq
    loop
        perform parla.check_embedder(v_uid, v_window.embedder, v_window.embedding);
        insert into public.chat_windows (chat_id, user_id, start_seq, end_seq, body, words, embedding, embedder)
        values (p_chat_id, v_uid, v_window.start_seq, v_window.end_seq, v_window.body, v_window.words,
                v_window.embedding, v_window.embedder)
        on conflict (chat_id, start_seq) do update set
            end_seq = excluded.end_seq, body = excluded.body, words = excluded.words,
            embedding = excluded.embedding, embedder = excluded.embedder;
        v_count := v_count + 1;
    end loop;
    return v_count;
end $$;

-- In how many of the caller's windows each of p_words occurs; the row for '' counts them all.
create function public.word_counts(p_words text[], p_user_id uuid default null)
returns table (word text, windows integer)
language plpgsql stable security invoker set search_path = pg_catalog, public as $$
declare
    v_uid uuid := parla.owner_id(p_user_id);
begin
    if coalesce(array_length(p_words, 1), 0) > 256 then
        raise exception 'at most 256 words at once' using errcode = 'P0001', detail = 'bad_input';
    end if;
    return query
    select w.word, w.windows from public.window_words w
    where w.user_id = v_uid and w.word = any (array_prepend('', p_words)) and w.windows > 0;
end $$;

create or replace function parla.vector_count(p_uid uuid) returns bigint
language sql stable security invoker set search_path = pg_catalog, public as $$
    select (select count(*) from public.chats where user_id = p_uid and summary_embedding is not null)
         + (select count(*) from public.chat_summaries where user_id = p_uid)
         + (select count(*) from public.chat_facts where user_id = p_uid and embedding is not null)
         + (select count(*) from public.chat_windows where user_id = p_uid)
$$;

-- The match_count chats with the most similar text, each with its p_texts_per_chat most similar
-- texts (text_rank 1 is the best); chats ordered by their best text, then the latest activity.
drop function public.search_chats_semantic(extensions.vector, integer, text, uuid);
create function public.search_chats_semantic(
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
    return query
    with texts as (
        select c.id as chat_id, 'summary'::text as kind, 0 as s, 0 as e,
               1 - (c.summary_embedding <=> query_embedding) as sim
        from public.chats c where c.user_id = v_uid and c.summary_embedding is not null
        union all
        select m.chat_id, case m.level when 0 then 'chunk' else 'meta' end, m.start_seq, m.end_seq,
               1 - (m.embedding <=> query_embedding)
        from public.chat_summaries m where m.user_id = v_uid
        union all
        select f.chat_id, 'facts', f.start_seq, f.end_seq, 1 - (f.embedding <=> query_embedding)
        from public.chat_facts f where f.user_id = v_uid and f.embedding is not null
        union all
        select w.chat_id, 'turns', w.start_seq, w.end_seq, 1 - (w.embedding <=> query_embedding)
        from public.chat_windows w where w.user_id = v_uid
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

create or replace function public.embedded_texts(p_user_id uuid default null) returns table (
    chat_id uuid, kind text, start_seq integer, end_seq integer, body text
)
language plpgsql stable security invoker set search_path = pg_catalog, public as $$
declare
    v_uid uuid := parla.owner_id(p_user_id);
begin
    return query
    select c.id, 'summary'::text, 0, 0, c.summary_text from public.chats c
        where c.user_id = v_uid and c.summary_text <> ''
    union all
    select m.chat_id, case m.level when 0 then 'chunk' else 'meta' end, m.start_seq, m.end_seq, m.summary
        from public.chat_summaries m where m.user_id = v_uid
    union all
    select f.chat_id, 'facts', f.start_seq, f.end_seq, f.facts from public.chat_facts f
        where f.user_id = v_uid and f.facts <> ''
    union all
    select w.chat_id, 'turns', w.start_seq, w.end_seq, w.body from public.chat_windows w
        where w.user_id = v_uid;
end $$;

-- Re-embedding covers the windows too.
alter table parla.pending_embeddings drop constraint pending_embeddings_kind_check;
alter table parla.pending_embeddings add constraint pending_embeddings_kind_check
    check (kind in ('summary', 'chunk', 'meta', 'facts', 'turns'));

-- Writes every staged vector, the windows' too, in one transaction (as before, plus windows).
create or replace function public.commit_embeddings(p_embedder text, p_user_id uuid default null) returns integer
language plpgsql volatile security invoker set search_path = pg_catalog, public, extensions as $$
declare
    v_uid uuid := parla.owner_id(p_user_id);
    v_dims integer[];
    v_staged integer;
    v_count integer := 0;
    v_n integer;
begin
    select array_agg(distinct vector_dims(embedding)), count(*) into v_dims, v_staged
    from parla.pending_embeddings where user_id = v_uid and embedder = p_embedder;
    if coalesce(array_length(v_dims, 1), 0) > 1 then
        raise exception 'vectors of several dimensions given: %', v_dims
            using errcode = 'P0001', detail = 'embedder_mismatch';
    end if;
    if parla.vector_count(v_uid) > v_staged then
        raise exception '% embedded texts would be left with old vectors', parla.vector_count(v_uid) - v_staged
            using errcode = 'P0001', detail = 'bad_input', hint = 'embed every text from embedded_texts()';
    end if;
    update public.chats c set summary_embedding = s.embedding, summary_embedder = p_embedder
    from parla.pending_embeddings s
    where s.user_id = v_uid and s.embedder = p_embedder and s.kind = 'summary' and c.id = s.chat_id
      and c.user_id = v_uid;
    get diagnostics v_n = row_count;
    v_count := v_count + v_n;
    update public.chat_summaries m set embedding = s.embedding, embedder = p_embedder
    from parla.pending_embeddings s
    where s.user_id = v_uid and s.embedder = p_embedder and s.kind in ('chunk', 'meta')
      and m.chat_id = s.chat_id and m.user_id = v_uid and m.level = case s.kind when 'chunk' then 0 else 1 end
      and m.start_seq = s.start_seq and m.end_seq = s.end_seq;
    get diagnostics v_n = row_count;
    v_count := v_count + v_n;
    update public.chat_facts f set embedding = s.embedding, embedder = p_embedder
    from parla.pending_embeddings s
    where s.user_id = v_uid and s.embedder = p_embedder and s.kind = 'facts'
      and f.chat_id = s.chat_id and f.user_id = v_uid and f.start_seq = s.start_seq and f.end_seq = s.end_seq;
    get diagnostics v_n = row_count;
    v_count := v_count + v_n;
    update public.chat_windows w set embedding = s.embedding, embedder = p_embedder
    from parla.pending_embeddings s
    where s.user_id = v_uid and s.embedder = p_embedder and s.kind = 'turns'
      and w.chat_id = s.chat_id and w.user_id = v_uid and w.start_seq = s.start_seq;
    get diagnostics v_n = row_count;
    v_count := v_count + v_n;
    if v_dims is not null then
        insert into public.memory_embedders (user_id, embedder, dim) values (v_uid, p_embedder, v_dims[1])
        on conflict (user_id) do update set embedder = excluded.embedder, dim = excluded.dim;
    end if;
    delete from parla.pending_embeddings where user_id = v_uid;
    return v_count;
end $$;

revoke all on function public.window_frontier, public.upsert_windows, public.word_counts,
    public.search_chats_semantic from public, anon;
grant execute on function public.window_frontier, public.upsert_windows, public.word_counts,
    public.search_chats_semantic to authenticated, service_role;
revoke all on function parla.count_window_words from public, anon;
grant execute on function parla.count_window_words to authenticated, service_role;

create or replace function public.parla_schema_version() returns integer
language sql immutable as $$ select 4 $$;
