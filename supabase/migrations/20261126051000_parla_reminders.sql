-- Timers and reminders (parla.records.reminder), the user's across chats.
--
-- Decisions:
-- * One row per reminder, owned by the user under RLS like the chats. It keeps the id of the chat
--   it was set in with no foreign key: deleting that chat does not silence a reminder.
-- * Its state moves once. `claim_reminder` is one conditional update (pending -> fired), so of
--   several devices of one user claiming the same reminder exactly one gets the row back and says
--   it; the others get null. Which device tries first is the devices' rule (the device that set it,
--   then any other after a grace period), the atomic claim makes it one.
-- * Adding is idempotent by id (the id is chosen on the device, so a queued add sent twice is one
--   reminder); cancelling one that is fired or cancelled already leaves it as it is.

create table public.reminders (
    id uuid primary key,
    user_id uuid not null default auth.uid() references auth.users (id) on delete cascade,
    text text not null check (text <> ''),
    due_at timestamptz not null,
    time_zone text not null,
    kind text not null check (kind in ('timer', 'reminder')),
    chat_id uuid,
    turn_id text,
    device text,
    state text not null default 'pending' check (state in ('pending', 'fired', 'cancelled')),
    claimed_by text,
    created_at timestamptz not null default now(),
    fired_at timestamptz,
    cancelled_at timestamptz
);
create index reminders_pending on public.reminders (user_id, due_at) where state = 'pending';

alter table public.reminders enable row level security;
create policy reminders_owner on public.reminders for all to authenticated
    using (user_id = (select auth.uid())) with check (user_id = (select auth.uid()));
revoke all on public.reminders from anon;

create function parla.reminder_json(p_row public.reminders) returns jsonb
language sql immutable set search_path = pg_catalog, public as $$
    select to_jsonb(p_row) - 'user_id'
$$;

create function public.add_reminder(p_reminder jsonb, p_user_id uuid default null)
returns jsonb
language plpgsql volatile security invoker set search_path = pg_catalog, public as $$
declare
    v_uid uuid := parla.owner_id(p_user_id);
    v_row public.reminders;
begin
    insert into public.reminders
        (id, user_id, text, due_at, time_zone, kind, chat_id, turn_id, device, created_at)
    values ((p_reminder->>'id')::uuid, v_uid, p_reminder->>'text', (p_reminder->>'due_at')::timestamptz,
            p_reminder->>'time_zone', p_reminder->>'kind', (p_reminder->>'chat_id')::uuid, p_reminder->>'turn_id',
            p_reminder->>'device', coalesce((p_reminder->>'created_at')::timestamptz, now()))
    on conflict (id) do nothing;
    select * into v_row from public.reminders where id = (p_reminder->>'id')::uuid and user_id = v_uid;
    if v_row is null then
        raise exception 'reminder % belongs to someone else', p_reminder->>'id' using errcode = '42501';
    end if;
    return parla.reminder_json(v_row);
end $$;

-- The pending reminders, soonest first, or with p_history every one, newest due first.
create function public.list_reminders(p_history boolean default false, p_user_id uuid default null)
returns jsonb
language plpgsql stable security invoker set search_path = pg_catalog, public as $$
declare
    v_uid uuid := parla.owner_id(p_user_id);
begin
    if p_history then
        return coalesce((select jsonb_agg(parla.reminder_json(r) order by r.due_at desc, r.id)
                         from public.reminders r where r.user_id = v_uid), '[]'::jsonb);
    end if;
    return coalesce((select jsonb_agg(parla.reminder_json(r) order by r.due_at, r.id)
                     from public.reminders r where r.user_id = v_uid and r.state = 'pending'), '[]'::jsonb);
end $$;

create function public.cancel_reminder(p_id uuid, p_user_id uuid default null)
returns jsonb
language plpgsql volatile security invoker set search_path = pg_catalog, public as $$
declare
    v_uid uuid := parla.owner_id(p_user_id);
    v_row public.reminders;
begin
    update public.reminders set state = 'cancelled', cancelled_at = now()
    where id = p_id and user_id = v_uid and state = 'pending';
    select * into v_row from public.reminders where id = p_id and user_id = v_uid;
    if v_row is null then
        raise exception 'no reminder with id %', p_id using errcode = 'P0002';
    end if;
    return parla.reminder_json(v_row);
end $$;

-- The reminder as claimed by p_device, or null when it is no longer pending.
create function public.claim_reminder(p_id uuid, p_device text, p_user_id uuid default null)
returns jsonb
language plpgsql volatile security invoker set search_path = pg_catalog, public as $$
declare
    v_row public.reminders;
begin
    update public.reminders set state = 'fired', claimed_by = p_device, fired_at = now()
    where id = p_id and user_id = parla.owner_id(p_user_id) and state = 'pending'
    returning * into v_row;
    if v_row is null then
        return null;
    end if;
    return parla.reminder_json(v_row);
end $$;

revoke all on function public.add_reminder, public.list_reminders, public.cancel_reminder, public.claim_reminder,
    parla.reminder_json from public, anon;
grant execute on function public.add_reminder, public.list_reminders, public.cancel_reminder, public.claim_reminder,
    parla.reminder_json to authenticated, service_role;

create or replace function public.parla_schema_version() returns integer
language sql immutable as $$ select 12 $$;
