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

-- Token usage the Live service reported for a model turn (prompt, response, total, cached,
-- thoughts, tool-use prompt tokens), stored with the turn by the append below.
alter table public.chat_turns add column usage jsonb check (usage is null or jsonb_typeof(usage) = 'object');

create or replace function parla.append(p_chat public.chats, p_turns jsonb) returns jsonb
language plpgsql volatile security invoker set search_path = pg_catalog, public as $$
declare
    v_bad jsonb;
    v_known record;
    v_added integer;
    v_latest timestamptz;
    v_out jsonb;
begin
    if p_turns is null or jsonb_typeof(p_turns) <> 'array' then
        raise exception 'turns must be a JSON array' using errcode = 'P0001', detail = 'bad_input';
    end if;
    select t.value into v_bad from jsonb_array_elements(p_turns) t
    where jsonb_typeof(t.value) <> 'object' or coalesce(t.value->>'id', '') = ''
       or jsonb_typeof(t.value->'parts') is distinct from 'array'
    limit 1;
    if found then
        raise exception 'each turn needs an id, a role and parts: %', left(v_bad::text, 200)
            using errcode = 'P0001', detail = 'bad_input';
    end if;
    if (select count(distinct t->>'id') from jsonb_array_elements(p_turns) t) <> jsonb_array_length(p_turns) then
        raise exception 'the same turn id appears twice in one append' using errcode = 'P0001', detail = 'bad_input';
    end if;
    -- a turn id already stored in another chat of this user is a conflict; in this chat, a repeat
    select t.value->>'id' as id, c.chat_id into v_known
    from jsonb_array_elements(p_turns) t
    join public.chat_turns c on c.user_id = p_chat.user_id and c.id = t.value->>'id'
    where c.chat_id <> p_chat.id
    limit 1;
    if found then
        raise exception 'turn % is already stored in chat %', v_known.id, v_known.chat_id
            using errcode = 'P0001', detail = 'turn_conflict';
    end if;
    with fresh as (
        select t.value as turn, p_chat.turn_count + row_number() over (order by t.ordinality) as seq
        from jsonb_array_elements(p_turns) with ordinality t
        where not exists (select 1 from public.chat_turns c where c.user_id = p_chat.user_id and c.id = t.value->>'id')
    ), inserted as (
        insert into public.chat_turns
            (chat_id, user_id, seq, id, role, parts, thinking, created_at, interrupted, source, model_variant,
             importance, usage)
        select p_chat.id, p_chat.user_id, f.seq, f.turn->>'id', f.turn->>'role', f.turn->'parts', f.turn->>'thinking',
               coalesce((f.turn->>'created_at')::timestamptz, now()),
               coalesce((f.turn->>'interrupted')::boolean, false), coalesce(f.turn->>'source', 'voice'),
               f.turn->>'model_variant', (f.turn->>'importance')::real, nullif(f.turn->'usage', 'null'::jsonb)
        from fresh f
        returning created_at
    )
    select count(*), max(created_at) into v_added, v_latest from inserted;
    if v_added > 0 then
        update public.chats set turn_count = turn_count + v_added,
            last_activity_at = greatest(last_activity_at, v_latest)
        where id = p_chat.id returning * into p_chat;
    end if;
    select coalesce(jsonb_agg(jsonb_build_object('id', c.id, 'seq', c.seq) order by t.ordinality), '[]'::jsonb)
    into v_out
    from jsonb_array_elements(p_turns) with ordinality t
    join public.chat_turns c on c.user_id = p_chat.user_id and c.id = t.value->>'id';
    return jsonb_build_object('chat', parla.chat_json(p_chat), 'turns', v_out, 'added', v_added);
end $$;

create or replace function public.parla_schema_version() returns integer
language sql immutable as $$ select 6 $$;
