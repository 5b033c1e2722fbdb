-- A reminder counts as said once its saying finished, not when it is claimed.
--
-- Decisions:
-- * The claim (20261126051000_parla_reminders.sql) stays the atomic decision of which device says
--   a reminder: pending -> fired. A separate mark, said_at, is written by that device after its
--   saying finished. A fired reminder without it had its saying cut off (the daemon stopped,
--   killed, or the machine lost power while it was said): the device that claimed it reads it with
--   `unsaid_reminders` at its next start and says it again. A kill -9 releases nothing, so the mark
--   is written after the saying rather than the claim released on a stop.
-- * A device that died saying a reminder may never start again (a laptop lost, or left off for
--   days): once its claim is stale (older than any saying takes, the client's setting), any device
--   of the user may take it up with `reclaim_reminder`, one conditional update as the claim. The
--   claimer's own restart takes it up the same way, which renews the claim's time, so another
--   device never says it again beside it.
-- * The mark is written once (coalesce) and only by the claimer; another device gets null. A mark
--   of a reminder still pending claims it in the same update: it was claimed in a device's local
--   copy while the server was away, said there, and its mark waited in that device's outbox.
-- * Reminders fired before this migration were said as far as anyone knows: they count as said
--   when they were claimed.
-- * Same row-level security as the reminders table: the functions are security invoker and read
--   and write only the caller's rows.
-- * Safe to apply again (a test re-applies the migrations after a given one): the column and the
--   counting of older reminders as said come once.

do $$
begin
    if not exists (select 1 from information_schema.columns
                   where table_schema = 'public' and table_name = 'reminders' and column_name = 'said_at') then
        alter table public.reminders add column said_at timestamptz;
        update public.reminders set said_at = fired_at where state = 'fired';
    end if;
end $$;
create index if not exists reminders_unsaid on public.reminders (user_id, due_at)
    where state = 'fired' and said_at is null;

-- The reminder as said by p_device, or null when another device holds it, it was cancelled, or
-- none has that id.
create or replace function public.mark_reminder_said(p_id uuid, p_device text, p_user_id uuid default null)
returns jsonb
language plpgsql volatile security invoker set search_path = pg_catalog, public as $$
declare
    v_uid uuid := parla.owner_id(p_user_id);
    v_row public.reminders;
begin
    update public.reminders
    set state = 'fired', claimed_by = p_device, fired_at = coalesce(fired_at, now()), said_at = coalesce(said_at, now())
    where id = p_id and user_id = v_uid and (state = 'pending' or (state = 'fired' and claimed_by = p_device));
    select * into v_row from public.reminders
    where id = p_id and user_id = v_uid and state = 'fired' and claimed_by = p_device;
    if v_row is null then
        return null;
    end if;
    return parla.reminder_json(v_row);
end $$;

-- The reminders claimed and never marked said that p_device may say again, soonest due first: the
-- ones it claimed, and those another device claimed p_stale_s seconds ago or more (by this
-- server's clock, so the devices' clocks do not matter).
create or replace function public.unsaid_reminders(p_device text, p_stale_s double precision, p_user_id uuid default null)
returns jsonb
language plpgsql stable security invoker set search_path = pg_catalog, public as $$
declare
    v_uid uuid := parla.owner_id(p_user_id);
begin
    return coalesce((select jsonb_agg(parla.reminder_json(r) order by r.due_at, r.id)
                     from public.reminders r
                     where r.user_id = v_uid and r.state = 'fired' and r.said_at is null
                       and (r.claimed_by = p_device or r.fired_at <= now() - make_interval(secs => p_stale_s))),
                    '[]'::jsonb);
end $$;

-- The reminder claimed again by p_device (its claim's time renewed), or null when it was said
-- meanwhile or another device holds a claim younger than p_stale_s. One conditional update, as the
-- claim: of two devices taking up one stale claim, one gets the row; the other waits for its lock,
-- and its condition, evaluated again on the row as the first left it (Read Committed,
-- https://www.postgresql.org/docs/current/transaction-iso.html), finds a fresh claim.
create or replace function public.reclaim_reminder(p_id uuid, p_device text, p_stale_s double precision,
                                                   p_user_id uuid default null)
returns jsonb
language plpgsql volatile security invoker set search_path = pg_catalog, public as $$
declare
    v_row public.reminders;
begin
    update public.reminders set claimed_by = p_device, fired_at = now()
    where id = p_id and user_id = parla.owner_id(p_user_id) and state = 'fired' and said_at is null
      and (claimed_by = p_device or fired_at <= now() - make_interval(secs => p_stale_s))
    returning * into v_row;
    if v_row is null then
        return null;
    end if;
    return parla.reminder_json(v_row);
end $$;

revoke all on function public.mark_reminder_said, public.unsaid_reminders, public.reclaim_reminder from public, anon;
grant execute on function public.mark_reminder_said, public.unsaid_reminders, public.reclaim_reminder
    to authenticated, service_role;

create or replace function public.parla_schema_version() returns integer
language sql immutable as $$ select 20 $$;
