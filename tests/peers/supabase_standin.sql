-- What a Supabase project has before any user migration, reduced to what Parla's migrations
-- reference: the API roles, auth.users, auth.uid()/auth.role() reading the request's JWT claims
-- (set per request by the PostgREST shim, as PostgREST does), the extensions schema, the
-- Realtime publication and Supabase's default grants on the public schema.
do $$
begin  -- roles are per cluster: created by the first database of a test session
    if not exists (select 1 from pg_roles where rolname = 'anon') then
        create role anon nologin noinherit;
        create role authenticated nologin noinherit;
        create role service_role nologin noinherit bypassrls;
    end if;
end $$;
create schema auth;
create schema extensions;
grant usage on schema auth, extensions, public to anon, authenticated, service_role;

create table auth.users (
    id uuid primary key default gen_random_uuid(),
    email text unique not null,
    encrypted_password text not null,
    created_at timestamptz not null default now(),
    last_sign_in_at timestamptz
);
create table auth.refresh_tokens (
    token text primary key,
    user_id uuid not null references auth.users (id) on delete cascade,
    revoked boolean not null default false,
    created_at timestamptz not null default now()
);

create function auth.jwt() returns jsonb language sql stable as $$
    select coalesce(nullif(current_setting('request.jwt.claims', true), ''), '{}')::jsonb
$$;
create function auth.uid() returns uuid language sql stable as $$
    select nullif(auth.jwt() ->> 'sub', '')::uuid
$$;
create function auth.role() returns text language sql stable as $$
    select nullif(auth.jwt() ->> 'role', '')
$$;
grant execute on function auth.jwt(), auth.uid(), auth.role() to anon, authenticated, service_role;

create publication supabase_realtime;

alter default privileges in schema public grant all on tables to anon, authenticated, service_role;
alter default privileges in schema public grant all on functions to anon, authenticated, service_role;
alter default privileges in schema public grant all on sequences to anon, authenticated, service_role;
