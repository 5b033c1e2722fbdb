"""The wake phrase, spotted offline by pocketsphinx keyword search on the 16 kHz microphone blocks.
Nothing leaves the machine while the daemon waits for it."""

from __future__ import annotations

from typing import Any

from parla.daemon.errors import WakeWordError

# Words of Parla's own vocabulary missing from the CMU dictionary, with their phones.
_EXTRA_WORDS = {"parla": "P AA R L AH"}


class WakePhrase:
    """Feed microphone blocks; `heard` says when the phrase was spoken. The decoder restarts after
    each detection, so one utterance activates once. About 0.02 s of CPU per second of audio."""

    def __init__(self, phrase: str, threshold: float) -> None:
        from pocketsphinx import Decoder  # imported here: only the wake mode needs it

        self.phrase = " ".join(phrase.lower().split())
        self._decoder: Any = Decoder(lm=None, kws_threshold=threshold, loglevel="FATAL")
        for word in self.phrase.split():
            if self._decoder.lookup_word(word) is None:
                if word not in _EXTRA_WORDS:
                    raise WakeWordError(
                        f"the wake phrase word {word!r} is not in the offline dictionary; "
                        "choose a phrase of common English words (PARLA_WAKE_PHRASE)"
                    )
                self._decoder.add_word(word, _EXTRA_WORDS[word], True)
        self._decoder.add_keyphrase("wake", self.phrase)
        self._decoder.activate_search("wake")
        self._decoder.start_utt()

    def heard(self, block: bytes) -> bool:
        self._decoder.process_raw(block, False, False)
        if self._decoder.hyp() is None:
            return False
        self._decoder.end_utt()
        self._decoder.start_utt()
        return True

    def reset(self) -> None:
        """Forget partial audio (after a session, so its tail cannot count as a wake phrase)."""
        self._decoder.end_utt()
        self._decoder.start_utt()
