-- The user's profile: what Parla knows about the user across every chat (parla.records.profile).
--
-- Decisions:
-- * One row per entry, owned by the user under RLS like the chats. An entry keeps the id of the
--   chat it was said in as provenance, with no foreign key: deleting that chat does not make
--   Parla forget who the user is (the user forgets an entry explicitly).
-- * Supersession is decided in one function call, under a per-user advisory lock, so two
--   compactions saving entries of the same subject at once still leave exactly one current.

create table public.user_profile (
    id uuid primary key,
    user_id uuid not null default auth.uid() references auth.users (id) on delete cascade,
    content text not null check (content <> ''),
    importance real not null default 5 check (importance between 0 and 10),
    subject text,
    origin text not null check (origin in ('remember', 'auto', 'user')),
    chat_id uuid,
    source_turn_id text,
    source_seq integer,
    said_at timestamptz not null,
    created_at timestamptz not null default now(),
    superseded_by uuid,
    superseded_at timestamptz,
    forgotten_at timestamptz
);
create index user_profile_subject on public.user_profile (user_id, subject) where subject is not null;

alter table public.user_profile enable row level security;
create policy user_profile_owner on public.user_profile for all to authenticated
    using (user_id = (select auth.uid())) with check (user_id = (select auth.uid()));
revoke all on public.user_profile from anon;

create function parla.profile_json(p_row public.user_profile) returns jsonb
language sql immutable set search_path = pg_catalog, public as $$
    select to_jsonb(p_row) - 'user_id'
$$;

-- Save entries (a jsonb array of ProfileEntry objects); an id already stored is edited (content,
-- importance, subject) when p_edit, else left as it is. Returns the entries written, as stored.
create function public.save_profile(p_entries jsonb, p_edit boolean default false, p_user_id uuid default null)
returns jsonb
language plpgsql volatile security invoker set search_path = pg_catalog, public as $$
declare
    v_uid uuid := parla.owner_id(p_user_id);
    v_entry jsonb;
    v_row public.user_profile;
    v_later uuid;
    v_out jsonb := '[]'::jsonb;
begin
    perform pg_advisory_xact_lock(hashtextextended('parla.profile:' || v_uid::text, 0));
    for v_entry in select value from jsonb_array_elements(p_entries) loop
        v_row := null;
        insert into public.user_profile
            (id, user_id, content, importance, subject, origin, chat_id, source_turn_id, source_seq, said_at,
             created_at)
        values ((v_entry->>'id')::uuid, v_uid, v_entry->>'content', (v_entry->>'importance')::real,
                v_entry->>'subject', v_entry->>'origin', (v_entry->>'chat_id')::uuid, v_entry->>'source_turn_id',
                (v_entry->>'source_seq')::integer, (v_entry->>'said_at')::timestamptz,
                coalesce((v_entry->>'created_at')::timestamptz, now()))
        on conflict (id) do nothing
        returning * into v_row;
        if v_row is null and p_edit then
            update public.user_profile set content = v_entry->>'content',
                importance = (v_entry->>'importance')::real, subject = v_entry->>'subject'
            where id = (v_entry->>'id')::uuid and user_id = v_uid
            returning * into v_row;
        end if;
        continue when v_row is null;
        if v_row.subject is not null then
            select p.id into v_later from public.user_profile p
            where p.user_id = v_uid and p.subject = v_row.subject and p.id <> v_row.id
              and p.superseded_by is null and p.forgotten_at is null and p.said_at > v_row.said_at
            order by p.said_at desc, p.id limit 1;
            if v_later is not null then
                update public.user_profile set superseded_by = v_later, superseded_at = now()
                where id = v_row.id returning * into v_row;
            else
                update public.user_profile set superseded_by = v_row.id, superseded_at = now()
                where user_id = v_uid and subject = v_row.subject and id <> v_row.id
                  and superseded_by is null and said_at <= v_row.said_at;
            end if;
        end if;
        v_out := v_out || parla.profile_json(v_row);
    end loop;
    return v_out;
end $$;

-- The current entries (most important first, newest first among equals), or with p_history every
-- entry, newest first.
create function public.list_profile(p_history boolean default false, p_user_id uuid default null)
returns jsonb
language plpgsql stable security invoker set search_path = pg_catalog, public as $$
declare
    v_uid uuid := parla.owner_id(p_user_id);
begin
    if p_history then
        return coalesce((select jsonb_agg(parla.profile_json(p) order by p.said_at desc, p.id)
                         from public.user_profile p where p.user_id = v_uid), '[]'::jsonb);
    end if;
    return coalesce((select jsonb_agg(parla.profile_json(p) order by p.importance desc, p.said_at desc, p.id)
                     from public.user_profile p
                     where p.user_id = v_uid and p.superseded_by is null and p.forgotten_at is null), '[]'::jsonb);
end $$;

create function public.set_profile_forgotten(p_id uuid, p_forgotten boolean, p_user_id uuid default null)
returns jsonb
language plpgsql volatile security invoker set search_path = pg_catalog, public as $$
declare
    v_row public.user_profile;
begin
    update public.user_profile set forgotten_at = case when p_forgotten then now() end
    where id = p_id and user_id = parla.owner_id(p_user_id)
    returning * into v_row;
    if v_row is null then
        raise exception 'no profile entry with id %', p_id using errcode = 'P0002';
    end if;
    return parla.profile_json(v_row);
end $$;

revoke all on function public.save_profile, public.list_profile, public.set_profile_forgotten, parla.profile_json
    from public, anon;
grant execute on function public.save_profile, public.list_profile, public.set_profile_forgotten, parla.profile_json
    to authenticated, service_role;

create or replace function public.parla_schema_version() returns integer
language sql immutable as $$ select 9 $$;
