"""Which turn detection the settings choose (`PARLA_TURN_DETECTION`): the service's or the local floor."""

from __future__ import annotations

from ..config import VoiceConfig
from .detection import Playback, TurnDetection
from .floor import local_floor
from .local import LocalDetection
from .service import ServiceDetection


def turn_detection(config: VoiceConfig, speaker: Playback | None) -> TurnDetection:
    """The detection the settings ask for, acting on `speaker`."""
    if config.turn_detection == "local":
        return LocalDetection(local_floor(config), speaker)
    return ServiceDetection(speaker)
