"""The inspector's web application: server-rendered pages (Jinja2, every value escaped) that htmx
upgrades in place, and the server-sent events of the running daemon.

Every change goes through the memory API the CLI and the tools use (the store's rename, pins and
facts, `set_forgotten`, the compactor's `regenerate`); a change answers with a redirect to the page
that shows it (post/redirect/get), with a one-line note of what was done or why not."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import jinja2
from markupsafe import Markup, escape
from pydantic import ValidationError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from parla.kernel.errors import ParlaError
from parla.kernel.local_time import LocalClock
from parla.memory.compaction.summary_queue import queue_status
from parla.memory.errors import ChatNotFound
from parla.memory.forgetting import MemoryItem, set_forgotten
from parla.memory.retrieval.turn_windows import rename_chat
from parla.records.embedding import embed_texts
from parla.records.facts import format_fact_lines
from parla.records.pins import Pin
from parla.records.turn import MESSAGE_NUMBER, MessageRange, Turn, WebSource

from .forms import form_fields, number, one_line
from .gate import TokenGate
from .live import LiveFeed
from .memory import HISTORY_PAGE, InspectorMemory, load_chat_page
from .pages import back
from .profile import ProfilePages
from .reminders import ReminderPages

HERE = Path(__file__).parent
CurrentChat = Callable[[], Awaitable[str | None]]
# The chats list shows the most recent ones; the search finds any.
_CHATS_LISTED = 500
# Characters of a turn a history list shows before a link to the rest.
TURN_TEXT_SHOWN = 2_000
# Characters of the model's context the page shows (its turns are also in the histories).
CONTEXT_TEXT_SHOWN = 50_000

_templates = jinja2.Environment(
    loader=jinja2.FileSystemLoader(HERE / "templates"),
    autoescape=True,  # a chat titled <script> is shown as text
    undefined=jinja2.StrictUndefined,
)


def _when(moment: object) -> str:
    return f"{moment:%Y-%m-%d %H:%M}" if moment is not None else "-"


def _turns(turns: list[Turn], chat_url: str, whole: bool = False) -> Markup:
    """The items of a history list. Built here rather than by a template loop: a 5,000-turn chat
    renders in a few milliseconds instead of a few hundred. A stored turn longer than
    TURN_TEXT_SHOWN shows its start and a link to the rest (one 50 MB turn made a 37 MB page)."""
    items = []
    for t in turns:
        who = "You" if t.role == "user" else "Parla"
        cut = " <i>(cut off)</i>" if t.interrupted else ""
        text, more = t.text, ""
        if not whole and t.seq is not None and len(text) > TURN_TEXT_SHOWN:
            url = f"{chat_url}/turns/{t.seq}"
            more = (
                f' <a class="whole" href="{escape(url)}" hx-boost="false" hx-get="{escape(url)}" '
                f'hx-target="closest li" hx-swap="outerHTML">… all {len(text):,} characters</a>'
            )
            text = text[:TURN_TEXT_SHOWN]
        # the number comes from data-seq (CSS), the speaker in <b>: the least markup per turn
        items.append(
            f'<li class="{t.role}" data-seq="{t.seq or ""}"><b>{who}</b> {escape(text)}{more}{cut}'
            f"{_sources(t.sources)}</li>"
        )
    return Markup("".join(items))


def _sources(sources: list[WebSource]) -> str:
    """The pages a look-up's answer came from, as links (an address that is not http(s) as text)."""
    if not sources:
        return ""
    links = []
    for s in sources:
        if s.uri.startswith(("https://", "http://")):
            links.append(f'<a href="{escape(s.uri)}" rel="noreferrer noopener" target="_blank">{escape(s.title)}</a>')
        else:
            links.append(escape(f"{s.title} ({s.uri})"))
    return f'<span class="sources" data-testid="sources">Sources: {", ".join(links)}</span>'


def _clip(text: str) -> str:
    """A long text's start: the context holds the newest turn whole, however long it is."""
    if len(text) <= CONTEXT_TEXT_SHOWN:
        return text
    return f"{text[:CONTEXT_TEXT_SHOWN]}\n… ({len(text) - CONTEXT_TEXT_SHOWN:,} more characters not shown)"


_templates.filters["when"] = _when
_templates.filters["clip"] = _clip
_templates.filters["turns"] = _turns


async def _render(template: str, **values: object) -> str:
    # In a thread: the daemon's event loop also carries the live session, and a long chat's page
    # takes tens of milliseconds to build.
    return await asyncio.to_thread(_templates.get_template(template).render, **values)


class Inspector:
    def __init__(
        self,
        mem: InspectorMemory,
        token: str,
        live: LiveFeed | None = None,
        current_chat: CurrentChat | None = None,
        clock: LocalClock | None = None,
    ) -> None:
        """`clock`: the user's zone, in which a reminder's time is read (the system's by default)."""
        self.mem = mem
        self.clock = clock or LocalClock()
        self.token = token
        self.live = live
        # which chat a running daemon is in (it may not be deleted); None when none runs
        self.current_chat = current_chat

    # -- helpers ---------------------------------------------------------------------------

    async def page(self, request: Request, template: str, status_code: int = 200, **values: object) -> HTMLResponse:
        html = await _render(
            template,
            base=request.scope.get("root_path", ""),
            token=self.token,
            live=self.live is not None,
            note=request.query_params.get("note"),
            error=request.query_params.get("error"),
            **values,
        )
        return HTMLResponse(html, status_code=status_code)

    async def _changed(
        self, request: Request, chat_id: str, change: Callable[[dict[str, str]], Awaitable[str]]
    ) -> Response:
        """Run a change with the form's fields; back to the chat with its note, or the error."""
        form = await form_fields(request)
        try:
            note = await change(form)
        except ChatNotFound as e:
            return back(request, "/", error=str(e))
        except (ParlaError, ValidationError) as e:  # a pydantic refusal: an importance out of range
            return back(request, f"/chats/{chat_id}", error=one_line(e))
        return back(request, f"/chats/{chat_id}", note=note)

    # -- pages -----------------------------------------------------------------------------

    async def chats(self, request: Request) -> Response:
        query = request.query_params.get("q", "").strip()
        result = await self.mem.search.search(query, limit=10) if query else None
        chats = await self.mem.store.list_chats(limit=_CHATS_LISTED)
        # an import's chats waiting for their summaries (the daemon's worker, or none running)
        summaries = await queue_status(self.mem.store, self.mem.summary_progress)
        return await self.page(
            request, "chats.html", chats=chats, query=query, result=result, listed=_CHATS_LISTED, summaries=summaries
        )

    async def failed(self, request: Request, exc: Exception) -> Response:
        """A failure Parla explains (the store is away, the embedder cannot be used): its one line
        on the page instead of a bare server error."""
        return await self.page(request, "missing.html", status_code=503, message=one_line(exc))

    async def chat(self, request: Request) -> Response:
        chat_id = request.path_params["chat_id"]
        try:
            view = await load_chat_page(
                self.mem,
                chat_id,
                all_ranges=request.query_params.get("ranges") == "all",
                all_turns=request.query_params.get("turns") == "all",
            )
        except ChatNotFound as e:
            return await self.page(request, "missing.html", status_code=404, message=str(e))
        confirm = request.query_params.get("confirm") == "delete"
        return await self.page(request, "chat.html", view=view, chat=view.history.chat, confirm_delete=confirm)

    async def earlier_turns(self, request: Request) -> Response:
        """The page of turns before `before` (a fragment the chat page inserts above its list)."""
        chat_id = request.path_params["chat_id"]
        number = request.query_params.get("before", "")
        if not MESSAGE_NUMBER.fullmatch(number):
            return Response("`before` is a turn number", status_code=400)
        before = int(number)
        start = max(1, before - HISTORY_PAGE)
        turns = await self.mem.store.load_turns(chat_id, start, before - 1) if before > 1 else []
        html = await _render(
            "earlier.html", base=request.scope.get("root_path", ""), chat_id=chat_id, turns=turns, earlier=start - 1
        )
        return HTMLResponse(html)

    async def whole_turn(self, request: Request) -> Response:
        """One turn with all of its text (the item a history list shows cut short)."""
        chat_id, number = request.path_params["chat_id"], request.path_params["seq"]
        if not MESSAGE_NUMBER.fullmatch(number):
            return Response("a turn is named by its number", status_code=400)
        turns = await self.mem.store.load_turns(chat_id, int(number), int(number))
        if not turns:
            return Response(f"this chat has no turn {number}", status_code=404)
        chat_url = f"{request.scope.get('root_path', '')}/chats/{chat_id}"
        return HTMLResponse(_turns(turns, chat_url, whole=True))

    async def live_chat(self, request: Request) -> Response:
        """The daemon's current chat, followed across switches."""
        if self.live is None:
            return back(request, "/", error="the daemon is not running: there is no live chat to follow")
        return back(request, f"/chats/{self.live.state().chat_id}?follow=1")

    async def events(self, request: Request) -> Response:
        if self.live is None:
            return Response("the daemon is not running", status_code=404)
        return StreamingResponse(self._stream(self.live), media_type="text/event-stream")

    async def _stream(self, live: LiveFeed) -> AsyncIterator[str]:
        titles: dict[str, str | None] = {}
        async for event in live.events():
            data = dict(event.data)
            if event.kind == "state":
                chat_id = data["chat_id"]
                if chat_id not in titles:
                    try:
                        titles[chat_id] = (await self.mem.store.get_chat(chat_id)).title
                    except ParlaError:
                        titles[chat_id] = None
                data["title"] = titles[chat_id] or "(untitled)"
            yield f"event: {event.kind}\ndata: {json.dumps(data)}\n\n"

    # -- changes ---------------------------------------------------------------------------

    async def rename(self, request: Request) -> Response:
        chat_id = request.path_params["chat_id"]

        async def change(form: dict[str, str]) -> str:
            title = form.get("title", "").strip()
            if not title:
                raise ParlaError("a title cannot be empty")
            renamed = await rename_chat(self.mem.store, self.mem.embedder, chat_id, title)
            return f"Renamed to {renamed.display_title}."

        return await self._changed(request, chat_id, change)

    async def add_pin(self, request: Request) -> Response:
        chat_id = request.path_params["chat_id"]

        async def change(form: dict[str, str]) -> str:
            pin = await self.mem.store.add_pin(
                Pin(chat_id=chat_id, content=form.get("content", "").strip(), importance=number(form, "importance"))
            )
            return f"Pinned: {pin.content}"

        return await self._changed(request, chat_id, change)

    async def _pin(self, chat_id: str, pin_id: str) -> Pin:
        store = self.mem.store
        for pin in [*await store.list_pins(chat_id), *await store.list_pins(chat_id, forgotten=True)]:
            if pin.id == pin_id:
                return pin
        raise ParlaError(f"this chat has no pin {pin_id}")

    async def pin_importance(self, request: Request) -> Response:
        chat_id, pin_id = request.path_params["chat_id"], request.path_params["pin_id"]

        async def change(form: dict[str, str]) -> str:
            pin = await self._pin(chat_id, pin_id)
            changed = Pin.model_validate({**pin.model_dump(), "importance": number(form, "importance")})
            await self.mem.store.add_pin(changed)  # a pin is written by id: this updates it
            return f"Importance {changed.importance:g}: {pin.content}"

        return await self._changed(request, chat_id, change)

    async def pin_forgotten(self, request: Request) -> Response:
        chat_id, pin_id = request.path_params["chat_id"], request.path_params["pin_id"]
        forget = request.path_params["action"] == "forget"

        async def change(form: dict[str, str]) -> str:
            pin = await self._pin(chat_id, pin_id)
            item = MemoryItem("pin", chat_id, pin.content, pin_id=pin.id)
            await set_forgotten(self.mem.store, self.mem.embedder, item, forgotten=forget)
            return f"{'Forgot' if forget else 'Restored'} the pin: {pin.content}"

        return await self._changed(request, chat_id, change)

    async def fact_forgotten(self, request: Request) -> Response:
        chat_id = request.path_params["chat_id"]
        forget = request.path_params["action"] == "forget"

        async def change(form: dict[str, str]) -> str:
            item = MemoryItem("fact", chat_id, form.get("line", ""), range=MessageRange.parse(form.get("range", "")))
            await set_forgotten(self.mem.store, self.mem.embedder, item, forgotten=forget)
            return f"{'Forgot' if forget else 'Restored'} the fact: {item.content}"

        return await self._changed(request, chat_id, change)

    async def add_fact(self, request: Request) -> Response:
        chat_id = request.path_params["chat_id"]

        async def change(form: dict[str, str]) -> str:
            rng, line = MessageRange.parse(form.get("range", "")), form.get("line", "").strip()
            if not line:
                raise ParlaError("say what the fact is")
            block = next((b for b in await self.mem.store.list_facts(chat_id) if b.range == rng), None)
            if block is None:
                raise ParlaError(f"this chat has no facts of messages {rng}")
            lines = [*block.lines, line]
            (embedded,) = await embed_texts(self.mem.embedder, [format_fact_lines(lines)])
            await self.mem.store.set_fact_lines(chat_id, rng, lines, block.forgotten, embedded)
            return f"Added the fact: {line}"

        return await self._changed(request, chat_id, change)

    async def regenerate(self, request: Request) -> Response:
        chat_id = request.path_params["chat_id"]

        async def change(form: dict[str, str]) -> str:
            text = form.get("range", "").strip()
            report = await self.mem.compactor.regenerate(chat_id, MessageRange.parse(text) if text else None)
            return (
                f"Regenerated {report.chunk_summaries} chunk summaries, {report.fact_blocks} fact blocks and "
                f"{report.meta_summaries} meta summaries in {report.duration_ms:.0f} ms."
            )

        return await self._changed(request, chat_id, change)

    async def delete(self, request: Request) -> Response:
        """Deleting asks twice: the first request shows what would go, only a second one with
        `confirm=yes` deletes."""
        chat_id = request.path_params["chat_id"]
        if (await form_fields(request)).get("confirm") != "yes":
            return back(request, f"/chats/{chat_id}?confirm=delete")
        if self.current_chat is not None and await self.current_chat() == chat_id:
            return back(
                request,
                f"/chats/{chat_id}",
                error="the daemon is talking in this chat: switch or start a new one first",
            )
        try:
            chat = await self.mem.store.get_chat(chat_id)
            await self.mem.store.delete_chat(chat_id)
        except ParlaError as e:
            return back(request, "/", error=one_line(e))
        return back(request, "/", note=f"Deleted {chat.display_title} ({chat.turn_count} turns).")

    # -- the application -------------------------------------------------------------------

    def app(self) -> TokenGate:
        post = ["POST"]
        routes = [
            Route("/", self.chats),
            Route("/live", self.live_chat),
            Route("/events", self.events),
            Route("/chats/{chat_id}", self.chat),
            Route("/chats/{chat_id}/turns", self.earlier_turns),
            Route("/chats/{chat_id}/turns/{seq}", self.whole_turn),
            Route("/chats/{chat_id}/rename", self.rename, methods=post),
            Route("/chats/{chat_id}/delete", self.delete, methods=post),
            Route("/chats/{chat_id}/regenerate", self.regenerate, methods=post),
            Route("/chats/{chat_id}/pins", self.add_pin, methods=post),
            Route("/chats/{chat_id}/pins/{pin_id}/importance", self.pin_importance, methods=post),
            Route("/chats/{chat_id}/pins/{pin_id}/{action:str}", self.pin_forgotten, methods=post),
            Route("/chats/{chat_id}/facts", self.add_fact, methods=post),
            Route("/chats/{chat_id}/facts/{action:str}", self.fact_forgotten, methods=post),
            *ProfilePages(self.mem, self.page).routes(),
            *ReminderPages(self.mem, self.page, self.clock).routes(),
            Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
        ]
        return TokenGate(Starlette(routes=routes, exception_handlers={ParlaError: self.failed}), self.token)
