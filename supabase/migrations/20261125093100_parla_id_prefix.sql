-- An id prefix is matched literally: `%` and `_` in what the user typed are escaped, so "%%%%"
-- or "a%%%" (four characters, one of them real) no longer name every chat or a chat by one
-- character. The 4-character minimum counts the characters typed.
create or replace function public.find_chats(p_ref text, p_user_id uuid default null) returns jsonb
language plpgsql stable security invoker set search_path = pg_catalog, public as $$
declare
    v_uid uuid := parla.owner_id(p_user_id);
    v_ref text := btrim(coalesce(p_ref, ''));
    v_prefix text := replace(replace(replace(lower(v_ref), '\', '\\'), '%', '\%'), '_', '\_') || '%';
begin
    if v_ref = '' then
        return '[]'::jsonb;
    end if;
    return coalesce((
        select jsonb_agg(parla.chat_json(c) order by c.last_activity_at desc)
        from public.chats c
        where c.user_id = v_uid
          and (c.id::text = lower(v_ref)
               or (length(v_ref) >= 4 and c.id::text like v_prefix escape '\')
               or lower(c.title) = lower(v_ref))
    ), '[]'::jsonb);
end $$;

create or replace function public.parla_schema_version() returns integer
language sql immutable as $$ select 8 $$;
