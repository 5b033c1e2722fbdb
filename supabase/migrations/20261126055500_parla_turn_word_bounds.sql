-- A tighter bound on what a word adds to a turn's bm25, and a search that uses it to score far
-- fewer turns (search_turn_words, the same answers to the bit).
--
-- MaxScore's pruning (20261126052500_parla_turn_word_counts.sql) bounded each word by 2.2 idf,
-- what bm25 allows for any count in a turn of any length. On a heavy history whose chats repeat a
-- frame ("my beagle who will not stop barking" in every turn) four or five of a question's words
-- are each in about 12% of the turns, those bounds add up above the floor, and 8,000-20,000 turns
-- were scored in two passes.
--
-- A word adds idf * tf (k1 + 1) / (tf + k1 (1 - b + b len / avglen)) to a turn, which grows with
-- the count tf and shrinks with the turn's length len (and len >= tf). So, per user and word,
-- beside its count of turns: its highest count in one turn (most_in_turn) and the fewest tokens of
-- a turn holding it (shortest_turn), kept by the same statement triggers. They bound what the word
-- adds to any of its turns by idf * f(most, max(shortest, most)), with today's average length.
-- A delete leaves them as they were (a bound may stay loose, never too low); when no turn holds
-- the word any more they start again. The file can be run again (`if not exists`, `or replace`).

alter table public.turn_word_counts
    add column if not exists most_in_turn integer not null default 0 check (most_in_turn >= 0),
    add column if not exists shortest_turn integer check (shortest_turn >= 0);

create or replace function parla.turn_words_counted() returns trigger
language plpgsql volatile security invoker set search_path = pg_catalog, public as $$
begin
    if tg_op in ('DELETE', 'UPDATE') then
        update public.turn_word_counts c set turns = c.turns - d.turns, tokens = c.tokens - d.tokens,
            most_in_turn = case when c.turns = d.turns then 0 else c.most_in_turn end,
            shortest_turn = case when c.turns = d.turns then null else c.shortest_turn end
        from (select o.user_id, '' as word, count(*) as turns, coalesce(sum(o.word_count), 0) as tokens
              from old_turns o group by o.user_id
              union all
              select o.user_id, l.lexeme, count(*), 0
              from old_turns o, unnest(tsvector_to_array(o.words)) l(lexeme) group by o.user_id, l.lexeme) d
        where c.user_id = d.user_id and c.word = d.word;
    end if;
    if tg_op in ('INSERT', 'UPDATE') then
        insert into public.turn_word_counts as c (user_id, word, turns, tokens, most_in_turn, shortest_turn)
        select d.user_id, d.word, d.turns, d.tokens, d.most, d.shortest
        from (select n.user_id, '' as word, count(*) as turns, coalesce(sum(n.word_count), 0) as tokens,
                     0 as most, null::integer as shortest
              from new_turns n group by n.user_id
              union all
              -- tf as parla.turn_scores counts it: the word's positions in the turn
              select n.user_id, u.lexeme, count(*), 0, max(cardinality(u.positions)), min(n.word_count)
              from new_turns n, unnest(n.words) u group by n.user_id, u.lexeme) d
        order by d.user_id, d.word -- one order for every writer: no deadlock between two
        on conflict (user_id, word) do update set turns = c.turns + excluded.turns, tokens = c.tokens + excluded.tokens,
            most_in_turn = greatest(c.most_in_turn, excluded.most_in_turn),
            shortest_turn = least(c.shortest_turn, excluded.shortest_turn);
    end if;
    return null;
end $$;

-- the turns already stored
update public.turn_word_counts c set most_in_turn = d.most, shortest_turn = d.shortest
from (select t.user_id, u.lexeme, max(cardinality(u.positions)) as most, min(t.word_count) as shortest
      from public.chat_turns t, unnest(t.words) u group by t.user_id, u.lexeme) d
where c.user_id = d.user_id and c.word = d.lexeme;

-- The most a word (idf p_idf, at most p_most times in a turn of at least p_shortest tokens) adds to
-- a turn's bm25 at average length p_avg: parla.turn_scores' term at tf = p_most and the shortest
-- length such a turn can have; 2.2 idf when unknown. A hair above it, so that rounding in a sum of
-- terms cannot put a turn above the sum of its words' bounds.
create or replace function parla.word_bound(p_idf numeric, p_most integer, p_shortest integer, p_avg double precision)
returns double precision
language sql immutable parallel safe set search_path = pg_catalog as $$
    select case when coalesce(p_most, 0) <= 0 or p_shortest is null then 2.2 * p_idf
                else p_idf * (p_most * 2.2) / (p_most + 1.2 * (0.25 + 0.75 * greatest(p_shortest, p_most) / greatest(p_avg, 1)))
           end * (1 + 1e-9)
$$;

-- bm25 (k1 1.2, b 0.75) of the turns of p_uid (of p_chat_id when given) holding every word of
-- p_all and one of p_any (either may be empty), over the words p_words (whose idf are p_idf),
-- best first, at most p_count (null: all); the sum as before, so the scores are the same to the
-- bit.
drop function if exists parla.turn_scores(uuid, uuid, text[], numeric[], text[], double precision, integer);
create or replace function parla.turn_scores(
    p_uid uuid, p_chat_id uuid, p_words text[], p_idf numeric[], p_all text[], p_any text[],
    p_avg double precision, p_count integer
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
      and t.words @@ (select concat_ws(' & ', (select '(' || string_agg(quote_literal(a), ' & ') || ')' from unnest(p_all) a),
                                             (select '(' || string_agg(quote_literal(h), ' | ') || ')' from unnest(p_any) h))::tsquery)
      and s.score is not null
    order by s.score desc, t.chat_id, t.seq
    limit p_count
$$;

-- MaxScore's pruning with those bounds, in two steps:
-- 1. A floor under the match_count-th best score: any set of turns holding at least match_count
--    turns gives one (its match_count-th best score: the best turns of all score at least that).
--    The first of these to hold that many: the turns holding every rarer word (in under a
--    twentieth of the turns, else the rarest) and the rarest of the others, those holding every
--    rarer word, those holding one of them. A set that holds fewer costs little to score.
-- 2. Which turns can reach the floor: a turn without word w scores at most the sum of the other
--    words' bounds, so w is required when that sum is under the floor; and, as before, a turn
--    holding only the most common words whose bounds add up below the floor cannot reach it.
--    Only the turns holding every required word and one of the others are scored, unless the set
--    of step 1 held all of them already (then its best are the best). On a history whose chats
--    repeat their frame, a question ("the leash for my beagle who will not stop barking")
--    requires most of its words: about a thousand turns are scored, in one pass, instead of the
--    8,000-10,000 holding a rarer word, in two.
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
    v_bound double precision[]; -- and the most it adds to a turn (parla.word_bound)
    v_rare text[]; -- the rarer words
    v_next text; -- the rarest of the others
    v_all text[];
    v_any text[];
    v_set integer;
    -- the best turns (chat, turn, score) of a set, by their full scores
    v_chats uuid[];
    v_seqs integer[];
    v_scores double precision[];
    v_floor double precision;
    v_required text[];
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
           array_agg(i.idf order by c.turns desc, c.word),
           array_agg(parla.word_bound(i.idf, c.most_in_turn, c.shortest_turn, v_avg) order by c.turns desc, c.word)
    into v_words, v_df, v_idf, v_bound
    from public.turn_word_counts c
    cross join lateral (select ln((v_total - c.turns + 0.5) / (c.turns + 0.5)) as idf) i
    where c.user_id = v_uid and c.word <> '' and c.turns > 0 and 2 * c.turns < v_total
      and c.word in (select l.lexeme from unnest(p_words) w(word),
                     unnest(tsvector_to_array(to_tsvector('simple'::regconfig, w.word))) l(lexeme));
    if v_words is null then
        return;
    end if;
    v_rare := coalesce((select array_agg(v_words[i]) from generate_subscripts(v_df, 1) i where 20 * v_df[i] < v_total),
                       array[v_words[cardinality(v_words)]]);
    v_next := v_words[cardinality(v_words) - cardinality(v_rare)];
    -- 1.
    for v_set in 1..3 loop
        v_all := case v_set when 1 then v_rare || array_remove(array[v_next], null) when 2 then v_rare else '{}' end;
        v_any := case v_set when 3 then v_rare else '{}' end;
        continue when (v_set = 2 and v_next is null) or (v_set = 3 and cardinality(v_rare) = 1);
        select array_agg(s.chat_id order by s.score desc, s.chat_id, s.seq),
               array_agg(s.seq order by s.score desc, s.chat_id, s.seq),
               array_agg(s.score order by s.score desc, s.chat_id, s.seq), min(s.score)
        into v_chats, v_seqs, v_scores, v_floor
        from parla.turn_scores(v_uid, p_chat_id, v_words, v_idf, v_all, v_any, v_avg, match_count) s;
        exit when coalesce(cardinality(v_scores), 0) >= match_count;
        v_floor := null; -- fewer turns than asked for: no floor from this set
    end loop;
    -- 2.
    if v_floor is null then
        v_required := '{}';
        v_hold := v_words;
    else
        select coalesce(array_agg(w.word), '{}') into v_required
        from unnest(v_words, v_bound) w(word, bound)
        where (select sum(b) from unnest(v_bound) b) - w.bound < v_floor;
        select array_agg(b.word) into v_hold
        from (select w.word, sum(w.bound) over (order by w.n rows unbounded preceding) as bound
              from unnest(v_words, v_bound) with ordinality w(word, bound, n)) b
        where b.bound >= v_floor;
    end if;
    -- the set of step 1 held every turn that can reach the floor: its best are the best
    if v_floor is not null and (case when v_any = '{}' then v_all <@ v_required
                                     else v_hold <@ v_any or v_required && v_any end) then
        null;
    else
        select array_agg(s.chat_id order by s.score desc, s.chat_id, s.seq),
               array_agg(s.seq order by s.score desc, s.chat_id, s.seq),
               array_agg(s.score order by s.score desc, s.chat_id, s.seq)
        into v_chats, v_seqs, v_scores
        from parla.turn_scores(v_uid, p_chat_id, v_words, v_idf, v_required, v_hold, v_avg, match_count) s;
    end if;
    return query
    select c.id, c.title, t.seq, t.role, parla.turn_text(t.parts), b.score, c.last_activity_at
    from unnest(v_chats, v_seqs, v_scores) with ordinality b(chat_id, seq, score, n)
    join public.chats c on c.id = b.chat_id
    join public.chat_turns t on t.chat_id = b.chat_id and t.seq = b.seq
    order by b.n;
end $$;

revoke all on function parla.word_bound, parla.turn_scores from public, anon;
grant execute on function parla.word_bound, parla.turn_scores to authenticated, service_role;
