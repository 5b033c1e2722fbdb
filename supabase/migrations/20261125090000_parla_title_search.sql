-- A chat's title is searchable like what was said: it is indexed as the chat's window before the
-- first turn (start_seq 0; parla.memory.retrieval.turn_windows), embedded with its plain text and counted in
-- the word index by the trigger every window has. Whatever changes a title (rename_chat, a title
-- a compaction generated) drops that window in the same transaction, so the old title is never
-- found; the client embeds the new one. Titles stored before are indexed at the chat's next
-- compaction or by `parla memory backfill`.

alter table public.chat_windows drop constraint chat_windows_check;
alter table public.chat_windows add constraint chat_windows_check check (0 <= start_seq and start_seq <= end_seq);

create function parla.drop_stale_title_window() returns trigger
language plpgsql volatile security invoker set search_path = pg_catalog, public as $$
begin
    delete from public.chat_windows w where w.chat_id = new.id and w.user_id = new.user_id and w.start_seq = 0;
    return null;
end $$;
create trigger chats_title_changed after update of title on public.chats
    for each row when (old.title is distinct from new.title) execute function parla.drop_stale_title_window();

create or replace function public.parla_schema_version() returns integer
language sql immutable as $$ select 7 $$;
