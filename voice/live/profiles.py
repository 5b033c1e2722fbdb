"""What each family of Gemini Live models accepts, in one place: how a fresh session is seeded
with the chat's history, whether client content may be sent mid-session and whether its
`turn_complete` cuts off a reply under way, how function calls behave, and which setup fields the
model refuses. The setup (voice.live.setup) is built from the profile; its other methods say how
the conversation loop seeds a session, sends a typed turn and answers a tool call.

From the documentation, read November 2026:
- Gemini 3.8 Live, https://ai.google.dev/gemini-api/docs/models/gemini-3.8-live ("Migrating from
  Gemini 3.1 Flash Live"): asynchronous (NON_BLOCKING) function calls are the default, BLOCKING
  still declarable per function, responses scheduled SILENT / WHEN_IDLE / INTERRUPT; client content
  with explicit roles all session long, `turn_complete=true` unconditionally interrupts the
  generation under way (without it the server waits); proactive audio always on (`proactive_audio:
  false` is an error); no thinking_level / thinking_config; affective dialog removed; audio
  responses only. The `-extended-thinking` variant accepts thinking_level.
- Gemini 3.1 Flash Live Preview, https://ai.google.dev/gemini-api/docs/models/gemini-3.1-flash-live-preview
  and the Live tools guide, https://ai.google.dev/gemini-api/docs/live-api/tools: synchronous
  function calls only; no proactive audio, no affective dialog; thinkingLevel, not thinkingBudget.
  Client content mid-session is refused (1007); history is seeded through the setup's
  `historyConfig.initialHistoryInClientContent`: the server then takes client content, without a
  model call, until `turn_complete=true`, and realtime input after it (HistoryConfig in the SDK).
- Gemini 2.5 Flash native audio previews: synchronous and asynchronous function calls (BLOCKING is
  the default), client content any time, proactive audio and affective dialog available.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from google.genai import types

from parla.kernel.models import bare_id

log = logging.getLogger(__name__)

SeedVia = Literal["history_config", "client_content"]
TypedVia = Literal["client_content", "realtime_text"]


@dataclass(frozen=True)
class ToolBehaviour:
    behavior: types.Behavior
    # How the model takes a NON_BLOCKING call's result; None for BLOCKING calls (it waits for them).
    scheduling: types.FunctionResponseScheduling | None = None


BLOCKING = ToolBehaviour(types.Behavior.BLOCKING)
WHEN_IDLE = ToolBehaviour(types.Behavior.NON_BLOCKING, types.FunctionResponseScheduling.WHEN_IDLE)

# Parla's wish per tool, where the model can call asynchronously. A switch (or a new chat) must be
# done before the model speaks about it, and a list is what the model answers with; remembering,
# recalling, forgetting and renaming can run while the model keeps talking, their result spoken
# once it is idle. A tool not named here blocks.
TOOL_BEHAVIOUR: dict[str, ToolBehaviour] = {
    "switch_chat": BLOCKING,
    "new_chat": BLOCKING,
    "list_chats": BLOCKING,
    "delete_chat": BLOCKING,  # the model asks the user before it says anything else
    "recall": WHEN_IDLE,
    "remember": WHEN_IDLE,
    "forget": WHEN_IDLE,
    "rename_chat": WHEN_IDLE,
}


@dataclass(frozen=True)
class Refusal:
    """A LiveConnectConfig field the model refuses unless `allowed(value)`."""

    field: str
    why: str
    allowed: Callable[[Any], bool] = lambda value: value is None


def _audio_only(modalities: Any) -> bool:
    return modalities is None or [str(getattr(m, "value", m)).upper() for m in modalities] == ["AUDIO"]


def _proactive_on(proactivity: Any) -> bool:
    return proactivity is None or getattr(proactivity, "proactive_audio", None) is not False


@dataclass(frozen=True)
class LiveProfile:
    family: str
    prefixes: tuple[str, ...]  # model ids that start with one of these belong to the family
    seed_via: SeedVia
    client_content_mid_session: bool
    turn_complete_interrupts: bool  # a client turn with turn_complete=true cuts off the reply under way
    non_blocking_tools: bool  # the model can call a function asynchronously
    default_behavior: types.Behavior  # what an undeclared behaviour means on this model
    refusals: tuple[Refusal, ...] = field(default_factory=tuple)

    def matches(self, model: str) -> bool:
        return bare_id(model).startswith(self.prefixes)

    # seeding and typed turns

    def history_config(self, seeding: bool) -> types.HistoryConfig | None:
        """The setup's history config when a fresh session is seeded with turns (else none)."""
        if seeding and self.seed_via == "history_config":
            return types.HistoryConfig(initial_history_in_client_content=True)
        return None

    @property
    def seed_turn_complete(self) -> bool:
        """turn_complete on the seed's client content: it closes the initial history (and makes no
        model call) with history_config; elsewhere it would ask for an answer, so the seed stays open."""
        return self.seed_via == "history_config"

    @property
    def typed_turns_via(self) -> TypedVia:
        """How a typed turn goes mid-session: as a client-content user turn, or as realtime text
        where client content is refused after the seed."""
        return "client_content" if self.client_content_mid_session else "realtime_text"

    # tools

    def tool_behaviour(self, name: str) -> ToolBehaviour:
        wish = TOOL_BEHAVIOUR.get(name, BLOCKING)
        return wish if self.non_blocking_tools else BLOCKING

    def declare(self, declarations: Sequence[types.FunctionDeclaration]) -> list[types.FunctionDeclaration]:
        """The declarations with each tool's behaviour stated, never left to the model's default
        (which differs between families). Models without asynchronous calls get no behaviour field:
        every call blocks there and the field is not documented for them."""
        if not self.non_blocking_tools:
            return [d.model_copy(update={"behavior": None}) for d in declarations]
        return [d.model_copy(update={"behavior": self.tool_behaviour(d.name or "").behavior}) for d in declarations]

    def function_response(self, response: types.FunctionResponse) -> types.FunctionResponse:
        """The response to a tool call, scheduled as its tool's behaviour says (only a NON_BLOCKING
        call's response carries a scheduling)."""
        scheduling = self.tool_behaviour(response.name or "").scheduling
        return response.model_copy(update={"scheduling": scheduling}) if scheduling else response

    # setup

    def refused(self, config: types.LiveConnectConfig) -> list[str]:
        """Why the model would refuse this setup: one line per refused field (empty when fine)."""
        return [f"{r.field}: {r.why}" for r in self.refusals if not r.allowed(getattr(config, r.field, None))]


GEMINI_3_8_LIVE = LiveProfile(
    family="gemini-3.8-live",
    prefixes=("gemini-3.8-live",),
    seed_via="client_content",
    client_content_mid_session=True,
    turn_complete_interrupts=True,
    non_blocking_tools=True,
    default_behavior=types.Behavior.NON_BLOCKING,
    refusals=(
        Refusal("thinking_config", "gemini-3.8-live does not take thinking_level; leave thinking_config out"),
        Refusal("enable_affective_dialog", "affective dialog was removed from gemini-3.8-live"),
        Refusal("proactivity", "proactive audio is always on; proactive_audio false is an error", _proactive_on),
        Refusal("response_modalities", "gemini-3.8-live answers in audio only", _audio_only),
    ),
)

GEMINI_3_8_LIVE_EXTENDED_THINKING = dataclasses.replace(
    GEMINI_3_8_LIVE,
    family="gemini-3.8-live-extended-thinking",
    prefixes=("gemini-3.8-live-extended-thinking",),
    refusals=tuple(r for r in GEMINI_3_8_LIVE.refusals if r.field != "thinking_config"),
)

GEMINI_3_1_FLASH_LIVE = LiveProfile(
    family="gemini-3.1-flash-live",
    prefixes=("gemini-3.1-flash-live",),
    seed_via="history_config",
    client_content_mid_session=False,
    turn_complete_interrupts=True,
    non_blocking_tools=False,
    default_behavior=types.Behavior.BLOCKING,
    refusals=(
        Refusal("enable_affective_dialog", "gemini-3.1-flash-live-preview has no affective dialog"),
        Refusal("proactivity", "gemini-3.1-flash-live-preview has no proactive audio"),
    ),
)

GEMINI_2_5_NATIVE_AUDIO = LiveProfile(
    family="gemini-2.5-native-audio",
    prefixes=("gemini-2.5-flash-native-audio", "gemini-live-2.5-flash-native-audio"),
    seed_via="client_content",
    client_content_mid_session=True,
    turn_complete_interrupts=False,  # only the 3.x pages document the interruption
    non_blocking_tools=True,
    default_behavior=types.Behavior.BLOCKING,
)

# Most specific first (the extended-thinking id starts with the plain 3.8 one); the newest family
# first among the rest, since an unknown model gets it.
PROFILES: tuple[LiveProfile, ...] = (
    GEMINI_3_8_LIVE_EXTENDED_THINKING,
    GEMINI_3_8_LIVE,
    GEMINI_3_1_FLASH_LIVE,
    GEMINI_2_5_NATIVE_AUDIO,
)
NEWEST = GEMINI_3_8_LIVE


@functools.cache
def profile_for(model: str) -> LiveProfile:
    """The profile of `model`; an unknown model gets the newest profile, with a warning (once)."""
    for profile in PROFILES:
        if profile.matches(model):
            return profile
    log.warning(
        "unknown Live model %s: assuming it behaves like %s",
        model,
        NEWEST.family,
        extra={"event": "live_model_unknown", "model": model},
    )
    return NEWEST
