-- The web pages a model turn's answer came from (a look-up grounded on Google Search): a JSON
-- list of {title, uri} in the order the search gave them; NULL when there are none. The append
-- below stores them with the turn; turns are read back whole (parla.turn_json), so they come back
-- with it.
alter table public.chat_turns add column sources jsonb
    check (sources is null or jsonb_typeof(sources) = 'array');

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
             importance, usage, sources)
        select p_chat.id, p_chat.user_id, f.seq, f.turn->>'id', f.turn->>'role', f.turn->'parts', f.turn->>'thinking',
               coalesce((f.turn->>'created_at')::timestamptz, now()),
               coalesce((f.turn->>'interrupted')::boolean, false), coalesce(f.turn->>'source', 'voice'),
               f.turn->>'model_variant', (f.turn->>'importance')::real, nullif(f.turn->'usage', 'null'::jsonb),
               nullif(nullif(f.turn->'sources', 'null'::jsonb), '[]'::jsonb)
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
language sql immutable as $$ select 11 $$;
