-- What a hosted Supabase project has before any user migration, reduced to what Parla's
-- migrations and the PostgREST shim touch. Run by the cluster's superuser (supabase_admin, as on a
-- hosted project); the migrations then run as `postgres`, which is not a superuser there.
--
-- Roles and their settings as a hosted project dumps them (`pg_dumpall --roles-only`): the API
-- roles INHERIT, authenticator NOINHERIT LOGIN with the API roles granted, and per-role
-- statement timeouts anon 3 s, authenticated 8 s, authenticator 8 s (service_role has none and
-- so runs under authenticator's), https://supabase.com/docs/guides/database/postgres/timeouts.
-- `postgres` gets the extra privileges Supabase gives it instead of superuser
-- (https://supabase.com/docs/guides/database/postgres/roles-superuser).
do $$
begin  -- roles are per cluster: created by the first database of a test session
    if not exists (select 1 from pg_roles where rolname = 'anon') then
        create role postgres login inherit createrole createdb replication bypassrls;
        create role anon nologin inherit;
        create role authenticated nologin inherit;
        create role service_role nologin inherit bypassrls;
        create role authenticator login noinherit;
        grant anon, authenticated, service_role to authenticator;
        grant anon, authenticated, service_role to postgres;
        alter role anon set statement_timeout = '3s';
        alter role authenticated set statement_timeout = '8s';
        alter role authenticator set statement_timeout = '8s';
    end if;
end $$;

-- the public schema belongs to the platform; postgres may create in it (and in the database:
-- granted where the database is created, as database privileges are not copied from a template)
grant usage, create on schema public to postgres;

create schema auth;
create schema extensions;
grant usage on schema auth, extensions, public to anon, authenticated, service_role, postgres;

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
-- user tables reference auth.users (on delete cascade), as every Supabase schema does
grant all on all tables in schema auth to postgres;

create function auth.jwt() returns jsonb language sql stable as $$
    select coalesce(nullif(current_setting('request.jwt.claims', true), ''), '{}')::jsonb
$$;
create function auth.uid() returns uuid language sql stable as $$
    select nullif(auth.jwt() ->> 'sub', '')::uuid
$$;
create function auth.role() returns text language sql stable as $$
    select nullif(auth.jwt() ->> 'role', '')
$$;
grant execute on function auth.jwt(), auth.uid(), auth.role() to anon, authenticated, service_role, postgres;

-- pgvector is not a trusted extension: on a hosted project supautils lets `postgres` create it;
-- here the superuser creates it up front, so the migration's `create extension if not exists`
-- finds it.
create extension vector with schema extensions;

-- The Realtime publication exists and belongs to postgres, so migrations can add tables to it.
create publication supabase_realtime;
alter publication supabase_realtime owner to postgres;

-- Supabase's default grants: what postgres creates in public is granted to the API roles
-- (row-level security and explicit revokes then narrow it).
alter default privileges for role postgres in schema public grant all on tables to anon, authenticated, service_role;
alter default privileges for role postgres in schema public
    grant all on functions to anon, authenticated, service_role;
alter default privileges for role postgres in schema public
    grant all on sequences to anon, authenticated, service_role;
