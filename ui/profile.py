"""The inspector's profile page: what Parla knows about the user across chats (parla.records.profile),
the current entries with their importance, subject and source, the history of superseded and
forgotten ones, and the corrections: add, edit, forget, restore. Every change goes through the
store's profile API, as `parla profile` does."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol

from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from parla.kernel.errors import ParlaError
from parla.memory.language.profile_rules import subject_of
from parla.memory.store.protocol import MemoryRecords
from parla.records.profile import ProfileEntry

from .forms import form_fields, number, one_line
from .pages import RenderPage, back


class ProfileMemory(Protocol):
    """What the profile page needs of the memory services (`ui.memory.InspectorMemory`)."""

    @property
    def store(self) -> MemoryRecords: ...


class ProfilePages:
    def __init__(self, mem: ProfileMemory, render: RenderPage) -> None:
        self.mem = mem
        self.render = render

    async def page(self, request: Request) -> Response:
        entries = await self.mem.store.list_profile(history=True)
        current = await self.mem.store.list_profile()
        earlier = [e for e in entries if not e.current]
        return await self.render(request, "profile.html", current=current, earlier=earlier)

    async def _changed(self, request: Request, change: Callable[[dict[str, str]], Awaitable[str]]) -> Response:
        form = await form_fields(request)
        try:
            note = await change(form)
        except (ParlaError, ValidationError) as e:
            return back(request, "/profile", error=one_line(e))
        return back(request, "/profile", note=note)

    async def _entry(self, entry_id: str) -> ProfileEntry:
        for entry in await self.mem.store.list_profile(history=True):
            if entry.id == entry_id:
                return entry
        raise ParlaError(f"the profile has no entry {entry_id}")

    async def add(self, request: Request) -> Response:
        async def change(form: dict[str, str]) -> str:
            text = form.get("content", "").strip()
            entry = ProfileEntry(
                content=text,
                importance=number(form, "importance"),
                subject=form.get("about", "").strip() or subject_of(text),
                origin="user",
            )
            (stored,) = await self.mem.store.save_profile([entry])
            return f"Added: {stored.content}"

        return await self._changed(request, change)

    async def edit(self, request: Request) -> Response:
        entry_id = request.path_params["entry_id"]

        async def change(form: dict[str, str]) -> str:
            entry = await self._entry(entry_id)
            edited = ProfileEntry.model_validate(
                {
                    **entry.model_dump(),
                    "content": form.get("content", entry.content).strip(),
                    "importance": number(form, "importance"),
                    "subject": form.get("about", "").strip() or None,
                }
            )
            (stored,) = await self.mem.store.save_profile([edited], edit=True)
            return f"Edited: {stored.content}"

        return await self._changed(request, change)

    async def forgotten(self, request: Request) -> Response:
        entry_id, forget = request.path_params["entry_id"], request.path_params["action"] == "forget"

        async def change(form: dict[str, str]) -> str:
            entry = await self.mem.store.set_profile_forgotten(entry_id, forget)
            return f"{'Forgot' if forget else 'Restored'}: {entry.content}"

        return await self._changed(request, change)

    def routes(self) -> list[Route]:
        post = ["POST"]
        return [
            Route("/profile", self.page),
            Route("/profile/add", self.add, methods=post),
            Route("/profile/{entry_id}/edit", self.edit, methods=post),
            Route("/profile/{entry_id}/{action:str}", self.forgotten, methods=post),
        ]
