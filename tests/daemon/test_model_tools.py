"""The tools the live model is given (daemon/model_tools.py), wired from settings over a real store:
Parla's own, in the order the model has always had them."""

from __future__ import annotations

import pytest

from parla.daemon.memory_services import open_memory
from parla.daemon.model_tools import confirmations, own_tools
from parla.daemon.settings import Settings
from parla.kernel.local_time import LocalClock
from parla.tools.confirmations import Dialogue
from tests.tools.test_chats import Session

pytestmark = pytest.mark.tier("fast")

DECLARED = [
    "switch_chat",
    "new_chat",
    "list_chats",
    "rename_chat",
    "remember",
    "recall",
    "delete_chat",
    "forget",
    "current_time",
    "set_timer",
    "set_reminder",
    "list_reminders",
    "cancel_reminder",
    "reminder_chat",
]


@pytest.mark.parametrize("look_up", [True, False])
async def test_parlas_own_tools_keep_their_order(tmp_path, monkeypatch, look_up):
    monkeypatch.setenv("PARLA_CONFIG_FILE", str(tmp_path / "none.toml"))
    settings = Settings(store_path=tmp_path / "parla.db", embedder="offline", summarizer="offline", look_up=look_up)
    async with open_memory(settings) as mem:
        chat = (await mem.store.create_chat(title="Here")).chat
        confirming = confirmations(mem, Dialogue())
        tools = own_tools(mem, Session(chat.id), LocalClock("Europe/Rome"), lambda sources: None, confirming)
    assert [t.name for t in tools] == DECLARED + (["look_up"] if look_up else [])
