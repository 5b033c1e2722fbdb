"""`parla login`, `parla logout`, `parla db migrate|check`, `parla sync` and `parla outbox`: pointing
Parla at a Supabase project, copying the local chats there, and the writes still waiting in the
local outbox, for this project or one Parla used before."""

from __future__ import annotations

import sys
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

import typer
from rich.markup import escape
from rich.table import Table

from ..errors import ConfigError
from ..settings import Settings
from .support import (
    SETUP,
    command,
    emit_json,
    err,
    fail,
    group,
    load_settings,
    out,
    progress_bar,
    store_and_summarise,
)

# The Supabase client and the stores are imported by the commands that use them: the other
# commands start without loading them.
if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from parla.memory.store.outbox import Outbox
    from parla.memory.store.protocol import AppendResult
    from parla.memory.store.sqlite.store import SQLiteChatStore
    from parla.records.chat import Chat


def _db_url(settings: Settings) -> str:
    if settings.supabase_db_url is None or not settings.supabase_db_url.get_secret_value():
        raise ConfigError(
            "set PARLA_SUPABASE_DB_URL to the project's Postgres connection string (Project Settings → Database), "
            "or apply supabase/migrations with `supabase db push` or the SQL editor"
        )
    return settings.supabase_db_url.get_secret_value()


@command
async def login(
    email: str = typer.Option(..., prompt=True, help="The Supabase user's email."),
    password: str = typer.Option(..., prompt=True, hide_input=True, help="The password (asked for when omitted)."),
) -> None:
    """Sign in to the Supabase project once; the session is kept (mode 0600) and refreshed."""
    from parla.memory.store.supabase.session import sign_in

    from ..stores import SUPABASE, backend, supabase_anon_key, supabase_url

    settings = load_settings()
    user_id = await sign_in(
        supabase_url(settings), supabase_anon_key(settings), email, password, settings.supabase_session_file
    )
    out.print(f"Signed in as {email} (user {user_id}); session kept in {settings.supabase_session_file}.")
    if backend(settings) is not SUPABASE:
        out.print("Set PARLA_STORE=supabase to keep chats there (`parla sync` copies the local ones).")


@command
async def logout() -> None:
    """Forget the saved Supabase session."""
    settings = load_settings()
    path = settings.supabase_session_file
    existed = path.exists()
    path.unlink(missing_ok=True)
    out.print(f"Signed out: removed {path}." if existed else "No saved session.")


@command
async def migrate(
    check_indexes: bool = typer.Option(
        False,
        "--check-indexes",
        help="Check the vector indexes against an exact scan (and build again one that falls short) "
        "even when no migration built them.",
    ),
) -> None:
    """Apply the migrations in supabase/migrations through PARLA_SUPABASE_DB_URL; after one that
    builds vector indexes, check that their nearest rows agree with an exact scan, building an
    index again (without blocking writes) while it does not."""
    from parla.memory.store.supabase.schema import IndexCheck, apply_migrations, check_vector_indexes, migrations

    settings = load_settings()
    url = _db_url(settings)
    applied = apply_migrations(url)
    if not applied:
        out.print(f"The schema is up to date ({len(migrations())} migrations).")
    for m in applied:
        out.print(f"applied {m.path.name}")
    if check_indexes or any(m.asks_for_index_check for m in applied):
        check = IndexCheck(
            settings.supabase_index_check_sample,
            settings.supabase_index_check_agreement,
            settings.supabase_index_check_rebuilds,
        )
        for checked in check_vector_indexes(url, check):
            short = checked.agreement < check.agreement
            out.print(f"{checked.text}{': searches may miss chats' if short else ''}")


@command
async def check(as_json: bool = typer.Option(False, "--json", help="Print as JSON.")) -> None:
    """Verify the project has Parla's schema and that the credentials reach it."""
    from parla.memory.store.supabase.schema import SCHEMA_VERSION

    from ..stores import connect_supabase

    settings = load_settings()
    async with await connect_supabase(settings) as store:
        version = await store.schema_version()
        stats = await store.stats()
    data = {
        "url": settings.supabase_url,
        "schema_version": version,
        "expected": SCHEMA_VERSION,
        "chats": stats.total_chats,
        "outbox_depth": stats.outbox_depth,
    }
    if as_json:
        emit_json(data, "db check")
        return
    out.print(f"Supabase schema version {version} (Parla needs {SCHEMA_VERSION}): ok; {stats.total_chats} chats.")


async def _all_chats(store: SQLiteChatStore) -> list[Chat]:
    chats: list[Chat] = []
    while page := await store.list_chats(500, len(chats)):
        chats.extend(page)
    return chats


@command
async def sync(as_json: bool = typer.Option(False, "--json", help="Print the outcome as JSON.")) -> None:
    """Copy every chat of the local SQLite store to Supabase (turns, titles, pins) and what Parla
    knows about the user (the profile's current entries), then summarise the chats there. Safe to
    repeat: what is already there is not copied twice."""
    from parla.memory.imports.storing import copy_chat
    from parla.memory.store.sqlite.store import SQLiteChatStore

    from ..memory_services import MemoryServices
    from ..stores import connect_supabase

    settings = load_settings()
    async with SQLiteChatStore(settings.store_path) as local, await connect_supabase(settings) as remote:
        mem = MemoryServices(settings, remote)

        async def store_one(chat: Chat) -> tuple[AppendResult, str | None]:
            result = await copy_chat(local, remote, chat)
            # new there, or left unsummarised last time
            return result, chat.id if result.added or not result.chat.summary_text else None

        with progress_bar() as progress:
            results, failed = await store_and_summarise(
                mem, await _all_chats(local), store_one, progress, "run `parla sync` again to retry"
            )
        profile = await remote.save_profile(await local.list_profile())
    copied = sum(r.added > 0 for r in results)
    unchanged = sum(r.added == 0 for r in results)
    turns_added = sum(r.added for r in results)
    report = {
        "copied": copied,
        "unchanged": unchanged,
        "turns_added": turns_added,
        "profile_entries_added": len(profile),
        "not_summarised": failed,
    }
    if as_json:
        emit_json(report, "sync")
        return
    table = Table("", "", show_header=False)
    for key, value in report.items():
        table.add_row(key.replace("_", " "), str(value if not isinstance(value, list) else len(value)))
    out.print(table)


@asynccontextmanager
async def _outbox(settings: Settings) -> AsyncIterator[Outbox]:
    """The outbox in the store's file, as the configured project's (no project off Supabase)."""
    from parla.memory.store.outbox import Outbox

    from ..stores import outbox_remote

    outbox = Outbox(settings.store_path, outbox_remote(settings) or "")
    await outbox.open()
    try:
        yield outbox
    finally:
        await outbox.close()


@command
async def outbox_list(as_json: bool = typer.Option(False, "--json", help="Print as JSON.")) -> None:
    """The writes waiting in the local outbox: for the Supabase project Parla uses, and for any
    project it used before (the URL or the user changed while they waited), with how to send
    those there or drop them."""
    settings = load_settings()
    async with _outbox(settings) as outbox:
        here = await outbox.depth() if settings.store == "supabase" else None
        elsewhere = await outbox.elsewhere()
    data = {
        "current": None if here is None else {"project": settings.supabase_url, "waiting": here[0], "refused": here[1]},
        "elsewhere": [
            {"project": q.project, "user": q.user, "waiting": q.waiting, "refused": q.refused} for q in elsewhere
        ],
    }
    if as_json:
        emit_json(data, "outbox list")
        return
    if here is not None:
        out.print(f"{escape(str(settings.supabase_url))} (this project): {here[0]} writes waiting, {here[1]} refused")
    for q in elsewhere:
        who = "signed in with `parla login`" if q.user == "session" else f"user {q.user}"
        out.print(f"{escape(q.project)} ({who}): {q.waiting} writes waiting, {q.refused} refused", markup=False)
    if elsewhere:
        out.print(
            "They are kept, and never sent to another project. To send them to theirs, run `parla outbox send` "
            "with PARLA_SUPABASE_URL (and its key, or a `parla login` to it) set to that project; to give them "
            "up, `parla outbox drop URL`.",
            markup=False,
        )
    elif here is None or here == (0, 0):
        out.print("The outbox is empty.")


@command
async def outbox_send() -> None:
    """Send what waits in the outbox for the configured Supabase project now (PARLA_SUPABASE_URL):
    to send the writes queued for a project Parla used before, point these settings at it."""
    from ..stores import connect_supabase

    settings = load_settings()
    if settings.store != "supabase":
        raise fail("`parla outbox send` sends to a Supabase project: set PARLA_STORE=supabase and its settings")
    async with _outbox(settings) as outbox:
        before, _ = await outbox.depth()
    async with await connect_supabase(settings) as store:
        await store.flush()
        after = await store.pending_writes()
    out.print(f"Sent {before - after.waiting} writes to {settings.supabase_url}.", markup=False)
    if after.refused:
        out.print(f"{after.refused} refused by the server for good are kept (`parla stats`).", markup=False)


@command
async def outbox_drop(
    project: str = typer.Argument(..., help="The URL of the project whose queued writes to drop."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Drop without asking."),
) -> None:
    """Drop the writes queued for a Supabase project Parla used before: they will never reach it.
    The configured project's own are not dropped (Parla sends them)."""
    settings = load_settings()
    project = project.rstrip("/")
    if settings.store == "supabase" and project == settings.supabase_url:
        raise fail("that is the project Parla uses now: its writes are sent, not dropped (`parla outbox send`)")
    async with _outbox(settings) as outbox:
        queued = sum(q.waiting + q.refused for q in await outbox.elsewhere() if q.project == project)
        if not queued:
            raise fail(f"no writes wait for {project} in the outbox: `parla outbox list` names the projects")
        err.print(f"{queued} writes queued for {project} would never reach it.", markup=False)
        if not yes:
            if not sys.stdin.isatty():
                raise fail("dropping cannot be undone: add --yes to drop them without a question")
            if not typer.confirm("Drop them?", err=True):
                out.print("Nothing dropped.")
                return
        dropped = await outbox.drop(project)
    out.print(f"Dropped {dropped} writes queued for {project}.", markup=False)


COMMANDS = {
    "login": login,
    "logout": logout,
    "sync": sync,
    "db": group("The Supabase schema: apply the migrations, check them.", {"migrate": migrate, "check": check}),
    "outbox": group(
        "Writes waiting in the local outbox: list them, send them, drop those of a project Parla no longer uses.",
        {"list": outbox_list, "send": outbox_send, "drop": outbox_drop},
    ),
}
PANEL = SETUP
