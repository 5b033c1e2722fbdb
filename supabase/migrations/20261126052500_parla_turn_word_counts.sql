-- Recall by words at a heavy user's size (100,000+ turns). search_turn_words counted, on every
-- call, all of the user's turns (for bm25's average length) and the turns holding each asked word
-- (its idf), then scored every turn holding any word found in under half of the turns: a question
-- with a word like "trip" or "to" scored tens of thousands of turns. Now:
--
-- * Per user, in how many turns each word occurs, and (word '') how many turns and tokens there
--   are: kept by statement triggers on chat_turns (deletes by cascade count too), so a search
--   reads a few rows instead of counting. The trigger adds one upsert of the statement's distinct
--   words to each write of turns.
-- * MaxScore's pruning, as the SQLite store does (memory/store/sqlite/search.py): a word adds
--   less than idf * (k1 + 1) = 2.2 idf to a turn's bm25 score. A floor under the match_count-th
--   best score is taken over the rarer words alone (those in under a twentieth of the turns, else
--   the rarest); the most common words whose bounds together stay below that floor cannot bring a
--   turn holding only them among the best, so only the turns holding one of the other words are
--   scored, over every word. Same answer, scores included, as scoring every turn.

create table public.turn_word_counts (
    user_id uuid not null default auth.uid() references auth.users (id) on delete cascade,
    word text not null,
    turns bigint not null check (turns >= 0),
    tokens bigint not null default 0, -- for the word '': every turn's tokens, for the average length
    primary key (user_id, word)
);
alter table public.turn_word_counts enable row level security;
create policy turn_word_counts_owner on public.turn_word_counts for all to authenticated
    using (user_id = (select auth.uid())) with check (user_id = (select auth.uid()));
grant select, insert, update, delete on public.turn_word_counts to authenticated, service_role;

-- A statement's turns counted out (old_turns) and in (new_turns). Counting out only updates: when
-- a user is deleted their counts go first, by cascade, and nothing is written back for them.
create function parla.turn_words_counted() returns trigger
language plpgsql volatile security invoker set search_path = pg_catalog, public as $$
begin
    if tg_op in ('DELETE', 'UPDATE') then
        update public.turn_word_counts c set turns = c.turns - d.turns, tokens = c.tokens - d.tokens
        from (select o.user_id, '' as word, count(*) as turns, coalesce(sum(o.word_count), 0) as tokens
              from old_turns o group by o.user_id
              union all
              select o.user_id, l.lexeme, count(*), 0
              from old_turns o, unnest(tsvector_to_array(o.words)) l(lexeme) group by o.user_id, l.lexeme) d
        where c.user_id = d.user_id and c.word = d.word;
    end if;
    if tg_op in ('INSERT', 'UPDATE') then
        insert into public.turn_word_counts as c (user_id, word, turns, tokens)
        select d.user_id, d.word, d.turns, d.tokens
        from (select n.user_id, '' as word, count(*) as turns, coalesce(sum(n.word_count), 0) as tokens
              from new_turns n group by n.user_id
              union all
              select n.user_id, l.lexeme, count(*), 0
              from new_turns n, unnest(tsvector_to_array(n.words)) l(lexeme) group by n.user_id, l.lexeme) d
        order by d.user_id, d.word -- one order for every writer: no deadlock between two
        on conflict (user_id, word) do update set turns = c.turns + excluded.turns, tokens = c.tokens + excluded.tokens;
    end if;
    return null;
end $$;
create trigger chat_turns_words_in after insert on public.chat_turns
    referencing new table as new_turns for each statement execute function parla.turn_words_counted();
create trigger chat_turns_words_out after delete on public.chat_turns
    referencing old table as old_turns for each statement execute function parla.turn_words_counted();
create trigger chat_turns_words_changed after update on public.chat_turns
    referencing old table as old_turns new table as new_turns
    for each statement execute function parla.turn_words_counted();

-- the turns already stored
insert into public.turn_word_counts (user_id, word, turns, tokens)
select t.user_id, '', count(*), coalesce(sum(t.word_count), 0) from public.chat_turns t group by t.user_id;
insert into public.turn_word_counts (user_id, word, turns)
select t.user_id, l.lexeme, count(*)
from public.chat_turns t, unnest(tsvector_to_array(t.words)) l(lexeme)
group by t.user_id, l.lexeme;

-- bm25 (k1 1.2, b 0.75) of the turns of p_uid (of p_chat_id when given) holding one of p_hold,
-- over the words p_words (whose idf are p_idf), best first, at most p_count (null: all). Only the
-- asked words of a turn are read (setweight marks them, ts_filter keeps them): half the time of
-- reading every word. Each turn's terms are added in the order of its words, whatever the plan,
-- so equal turns score equal to the bit and ties keep their order (chat, turn).
create function parla.turn_scores(
    p_uid uuid, p_chat_id uuid, p_words text[], p_idf numeric[], p_hold text[], p_avg double precision,
    p_count integer
) returns table (chat_id uuid, seq integer, score double precision)
language sql stable security invoker set search_path = pg_catalog, public as $$
    select t.chat_id, t.seq,
           sum(w.idf * (u.tf * 2.2) / (u.tf + 1.2 * (0.25 + 0.75 * t.word_count / greatest(p_avg, 1)))
               order by u.lexeme) as score
    from public.chat_turns t
    cross join lateral (select x.lexeme, cardinality(x.positions) as tf
                        from unnest(ts_filter(setweight(t.words, 'A', p_words), '{a}')) x) u
    join unnest(p_words, p_idf) w(word, idf) on w.word = u.lexeme
    where t.user_id = p_uid and (p_chat_id is null or t.chat_id = p_chat_id)
      and t.words @@ (select string_agg(quote_literal(h), ' | ')::tsquery from unnest(p_hold) h)
    group by t.chat_id, t.seq
    order by score desc, t.chat_id, t.seq
    limit p_count
$$;

create or replace function public.search_turn_words(
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
    v_words text[]; -- the words found in under half of the turns, most common first
    v_df bigint[]; -- in how many turns each is
    v_idf numeric[]; -- and its idf, as SQLite's FTS5 computes it
    v_rare text[]; -- the rarer words
    -- the best turns (chat, turn, score) among those holding a rarer word, by their full scores
    v_chats uuid[];
    v_seqs integer[];
    v_scores double precision[];
    v_floor double precision;
    v_hold text[];
begin
    if coalesce(cardinality(p_words), 0) = 0 or match_count <= 0 then
        return;
    end if;
    if cardinality(p_words) > 64 then
        raise exception 'at most 64 words may be searched at once' using errcode = 'P0001', detail = 'bad_input';
    end if;
    -- numeric, as avg() over the turns was: the same average to the bit
    select c.turns, c.tokens::numeric / nullif(c.turns, 0) into v_total, v_avg
    from public.turn_word_counts c where c.user_id = v_uid and c.word = '';
    if coalesce(v_total, 0) = 0 then
        return;
    end if;
    select array_agg(c.word order by c.turns desc, c.word), array_agg(c.turns order by c.turns desc, c.word),
           array_agg(ln((v_total - c.turns + 0.5) / (c.turns + 0.5)) order by c.turns desc, c.word)
    into v_words, v_df, v_idf
    from public.turn_word_counts c
    where c.user_id = v_uid and c.word <> '' and c.turns > 0 and 2 * c.turns < v_total
      and c.word in (select l.lexeme from unnest(p_words) w(word),
                     unnest(tsvector_to_array(to_tsvector('simple'::regconfig, w.word))) l(lexeme));
    if v_words is null then
        return;
    end if;
    -- those in under a twentieth of the turns, else the rarest one
    v_rare := coalesce((select array_agg(v_words[i]) from generate_subscripts(v_df, 1) i where 20 * v_df[i] < v_total),
                       array[v_words[cardinality(v_words)]]);
    select array_agg(s.chat_id order by s.score desc, s.chat_id, s.seq),
           array_agg(s.seq order by s.score desc, s.chat_id, s.seq),
           array_agg(s.score order by s.score desc, s.chat_id, s.seq), min(s.score)
    into v_chats, v_seqs, v_scores, v_floor
    from parla.turn_scores(v_uid, p_chat_id, v_words, v_idf, v_rare, v_avg, match_count) s;
    if coalesce(cardinality(v_scores), 0) < match_count then
        v_floor := null; -- fewer turns hold the rarer words than asked for: every matching turn is scored
    end if;
    -- the words a turn must hold to reach the floor: all but the most common ones whose bounds add
    -- up below it
    select array_agg(b.word) into v_hold
    from (select w.word, sum(2.2 * w.idf) over (order by w.n rows unbounded preceding) as bound
          from unnest(v_words, v_idf) with ordinality w(word, idf, n)) b
    where v_floor is null or b.bound >= v_floor;
    if v_floor is null or not v_hold <@ v_rare then
        -- some turns without a rarer word may score above the floor: score every one holding a word
        -- worth holding
        select array_agg(s.chat_id order by s.score desc, s.chat_id, s.seq),
               array_agg(s.seq order by s.score desc, s.chat_id, s.seq),
               array_agg(s.score order by s.score desc, s.chat_id, s.seq)
        into v_chats, v_seqs, v_scores
        from parla.turn_scores(v_uid, p_chat_id, v_words, v_idf, v_hold, v_avg, match_count) s;
    end if;
    return query
    select c.id, c.title, t.seq, t.role, parla.turn_text(t.parts), b.score, c.last_activity_at
    from unnest(v_chats, v_seqs, v_scores) with ordinality b(chat_id, seq, score, n)
    join public.chats c on c.id = b.chat_id
    join public.chat_turns t on t.chat_id = b.chat_id and t.seq = b.seq
    order by b.n;
end $$;

revoke all on function parla.turn_words_counted, parla.turn_scores from public, anon;
grant execute on function parla.turn_words_counted, parla.turn_scores to authenticated, service_role;

-- The windows' word counts (window_words) likewise by statement: a row trigger upserted each word
-- of each window, about 30 upserts a window and 1,000 for one call of upsert_windows; now one
-- upsert of the statement's distinct words. upsert_windows writes a call's windows in one
-- statement (checking the embedder once per embedder and dimension in it, not per window): it was
-- the slowest request of an import (86-111 ms for a chat's windows on the test machine).
create function parla.window_words_counted() returns trigger
language plpgsql volatile security invoker set search_path = pg_catalog, public as $$
begin
    if tg_op in ('DELETE', 'UPDATE') then
        update public.window_words w set windows = w.windows - d.windows
        from (select o.user_id, x as word, count(*) as windows
              from old_windows o, unnest(array_prepend('', o.words)) x group by o.user_id, x) d
        where w.user_id = d.user_id and w.word = d.word;
    end if;
    if tg_op in ('INSERT', 'UPDATE') then
        insert into public.window_words as w (user_id, word, windows)
        select n.user_id, x, count(*) from new_windows n, unnest(array_prepend('', n.words)) x
        group by n.user_id, x
        order by n.user_id, x -- one order for every writer: no deadlock between two
        on conflict (user_id, word) do update set windows = w.windows + excluded.windows;
    end if;
    return null;
end $$;
drop trigger chat_windows_counted on public.chat_windows;
drop function parla.count_window_words();
create trigger chat_windows_words_in after insert on public.chat_windows
    referencing new table as new_windows for each statement execute function parla.window_words_counted();
create trigger chat_windows_words_out after delete on public.chat_windows
    referencing old table as old_windows for each statement execute function parla.window_words_counted();
create trigger chat_windows_words_changed after update on public.chat_windows
    referencing old table as old_windows new table as new_windows
    for each statement execute function parla.window_words_counted();

-- Stores windows by their first turn, replacing a shorter one, in one transaction and one
-- statement. p_windows: [{start_seq, end_seq, body, words, embedding, embedder}]; of two windows
-- with the same first turn the later one is kept, as when they were written one by one.
create or replace function public.upsert_windows(p_chat_id uuid, p_windows jsonb, p_user_id uuid default null)
returns integer
language plpgsql volatile security invoker set search_path = pg_catalog, public, extensions as $$
declare
    v_uid uuid := parla.owner_id(p_user_id);
    v_kind record;
    v_count integer;
begin
    perform parla.locked_chat(v_uid, p_chat_id);
    for v_kind in
        select distinct on (i.embedder, jsonb_array_length(i.embedding)) i.embedder,
               i.embedding::text::extensions.vector as embedding
        from jsonb_to_recordset(coalesce(p_windows, '[]'::jsonb)) as i(embedder text, embedding jsonb)
    loop
        perform parla.check_embedder(v_uid, v_kind.embedder, v_kind.embedding);
    end loop;
    insert into public.chat_windows (chat_id, user_id, start_seq, end_seq, body, words, embedding, embedder)
    select distinct on (i.start_seq) p_chat_id, v_uid, i.start_seq, i.end_seq, i.body, i.words,
           i.embedding::text::extensions.vector, i.embedder
    from rows from (jsonb_to_recordset(coalesce(p_windows, '[]'::jsonb))
                    as (start_seq integer, end_seq integer, body text, words text[], embedding jsonb, embedder text))
        with ordinality as i(start_seq, end_seq, body, words, embedding, embedder, n)
    order by i.start_seq, i.n desc
    on conflict (chat_id, start_seq) do update set
        end_seq = excluded.end_seq, body = excluded.body, words = excluded.words,
        embedding = excluded.embedding, embedder = excluded.embedder;
    get diagnostics v_count = row_count;
    return v_count;
end $$;

revoke all on function parla.window_words_counted from public, anon;
grant execute on function parla.window_words_counted to authenticated, service_role;
