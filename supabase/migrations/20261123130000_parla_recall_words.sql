-- Recall by words as well as by meaning: every turn's text in a full-text index, searched by
-- bm25 over the caller's own turns.
--
-- Decisions:
-- * The text search configuration is 'simple' (lower-case, no stemming, no stop words) for every
--   user. A chat may be in any language or switch between several; a stemming configuration
--   chosen per user would mangle the other languages' words (and would have to be fixed when a
--   turn is indexed, not when it is searched). Bm25's idf, computed over the user's turns, makes
--   the frequent words of any language count for almost nothing instead. The SQLite store
--   tokenises the same way (FTS5 unicode61, accents kept).
-- * Postgres ranks with ts_rank, which knows nothing of how rare a word is: "what" would weigh as
--   much as "Lyon". The function computes bm25 itself (k1 1.2, b 0.75, idf as SQLite's FTS5 has
--   it), so both stores rank alike, and leaves out words found in half of the turns or more.
-- * The index is two generated columns: they are written in the statement that stores the turn,
--   and adding them fills every existing row.

create function parla.turn_text(p_parts jsonb) returns text
language sql immutable parallel safe set search_path = pg_catalog as $$
    select coalesce(string_agg(e.part->>'text', '' order by e.n), '')
    from jsonb_array_elements(p_parts) with ordinality as e(part, n)
$$;

-- tokens (not distinct words) of a tsvector: bm25's document length
create function parla.token_count(p_words tsvector) returns integer
language sql immutable parallel safe set search_path = pg_catalog as $$
    select coalesce(sum(cardinality(u.positions)), 0)::integer from unnest(p_words) u
$$;

alter table public.chat_turns
    add column words tsvector
        generated always as (to_tsvector('simple'::regconfig, parla.turn_text(parts))) stored,
    add column word_count integer
        generated always as (parla.token_count(to_tsvector('simple'::regconfig, parla.turn_text(parts)))) stored;
create index chat_turns_words on public.chat_turns using gin (words);

-- the index columns are not part of a turn as clients read it
create or replace function parla.turn_json(p_turn public.chat_turns) returns jsonb
language sql immutable set search_path = pg_catalog, public as $$
    select to_jsonb(p_turn) - 'user_id' - 'chat_id' - 'words' - 'word_count'
$$;

-- The caller's turns (of p_chat_id, else of every chat) holding the most telling of p_words,
-- best first by bm25. p_words are the request's words as Parla splits them (lower-case).
create function public.search_turn_words(
    p_words text[], match_count integer default 10, p_chat_id uuid default null, p_user_id uuid default null
) returns table (
    chat_id uuid, title text, seq integer, role text, body text, score double precision,
    last_activity_at timestamptz
)
language plpgsql stable security invoker set search_path = pg_catalog, public as $$
declare
    v_uid uuid := parla.owner_id(p_user_id);
    v_total bigint;
    v_avg double precision;
begin
    if coalesce(cardinality(p_words), 0) = 0 or match_count <= 0 then
        return;
    end if;
    if cardinality(p_words) > 64 then
        raise exception 'at most 64 words may be searched at once' using errcode = 'P0001', detail = 'bad_input';
    end if;
    select count(*), avg(t.word_count) into v_total, v_avg from public.chat_turns t where t.user_id = v_uid;
    return query
    with asked as (
        select distinct l.lexeme
        from unnest(p_words) w(word), unnest(tsvector_to_array(to_tsvector('simple'::regconfig, w.word))) l(lexeme)
    ),
    counted as (
        select a.lexeme, (select count(*) from public.chat_turns t
                          where t.user_id = v_uid and t.words @@ quote_literal(a.lexeme)::tsquery) as df
        from asked a
    ),
    telling as (
        select c.lexeme, ln((v_total - c.df + 0.5) / (c.df + 0.5)) as idf
        from counted c where c.df > 0 and 2 * c.df < v_total
    ),
    hits as (
        select t.chat_id, t.seq, t.role, t.parts, t.words, t.word_count
        from public.chat_turns t
        where t.user_id = v_uid and (p_chat_id is null or t.chat_id = p_chat_id)
          and t.words @@ (select string_agg(quote_literal(tl.lexeme), ' | ')::tsquery from telling tl)
    ),
    scored as (
        select h.chat_id, h.seq, h.role, h.parts,
               sum(tl.idf * (u.tf * 2.2) / (u.tf + 1.2 * (0.25 + 0.75 * h.word_count / greatest(v_avg, 1))))
                   as score
        from hits h
        cross join lateral (select x.lexeme, cardinality(x.positions) as tf from unnest(h.words) x) u
        join telling tl on tl.lexeme = u.lexeme
        group by h.chat_id, h.seq, h.role, h.parts, h.word_count
    )
    select s.chat_id, c.title, s.seq, s.role, parla.turn_text(s.parts), s.score, c.last_activity_at
    from scored s join public.chats c on c.id = s.chat_id
    order by s.score desc, s.chat_id, s.seq
    limit match_count;
end $$;

revoke all on function parla.turn_text, parla.token_count, public.search_turn_words from public, anon;
grant execute on function parla.turn_text, parla.token_count, public.search_turn_words
    to authenticated, service_role;

create or replace function public.parla_schema_version() returns integer
language sql immutable as $$ select 6 $$;
