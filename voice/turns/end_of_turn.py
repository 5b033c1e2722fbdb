"""Has the user finished? Pipecat's smart-turn v3.2 model (ONNX, run with onnxruntime) listens to
the last 8 s of the user's turn and gives the probability that it is complete, from intonation
and words, not from the silence alone. With local detection (`PARLA_TURN_DETECTION=local`) and
`PARLA_FLOOR_END_MODEL=smart-turn` the floor asks it once the user has been quiet
`PARLA_FLOOR_END_CHECK_MS`: if it says complete, the turn ends there; if not, the floor waits for
the long silence window (`PARLA_FLOOR_END_SILENCE_MS`), so that a hesitation in the middle of a
sentence keeps the floor and a finished sentence does not wait. It is off by default: on the
synthetic voices of bench.turns it hears most mid-sentence hesitations as finished
(docs/design/turn-taking.md has the figures).

The model file ships inside the `pipecat-ai` wheel: "The Smart Turn model weights are bundled with
Pipecat" (https://docs.pipecat.ai/server/utilities/smart-turn). It is installed without its
dependencies (pyproject.toml's `turn` extra says why) and read from there; Pipecat is never
imported. Its
input is Whisper's log-mel features of 8 s of 16 kHz audio, the end of the turn kept and the
front padded with zeros (Pipecat's `LocalSmartTurnAnalyzerV3`); `log_mel` computes them with
numpy (no torch, no transformers), checked against Pipecat's own implementation in the tests.

The model runs on one worker thread, never on the event loop: a question is asked, and the floor
looks for its answer at each following frame. One question at a time in the process.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import importlib.util
import logging
import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import numpy as np

from ..config import MIC_RATE, VoiceConfig
from ..errors import EndOfTurnModelMissing

log = logging.getLogger(__name__)

WINDOW_SAMPLES = 8 * MIC_RATE  # the model hears the last 8 s of the turn
N_FFT = 400  # Whisper's 25 ms window
HOP = 160  # and 10 ms hop
N_MELS = 80
MODEL_FILE = ("audio", "turn", "smart_turn", "data", "smart-turn-v3.2-cpu.onnx")

# 8 s of 16 kHz int16 audio (the end of the turn) in, the probability that the turn is complete out.
TurnCompletion = Callable[[np.ndarray], float]
# Runs a question off the caller's thread (a replay of recorded audio may answer at once).
Submit = Callable[[Callable[[], float]], "Future[float]"]


def _hz_to_mel(hz: np.ndarray) -> np.ndarray:
    """Slaney's mel scale (Whisper's): linear below 1 kHz, logarithmic above."""
    linear = 3.0 * hz / 200.0
    return np.where(hz >= 1000.0, 15.0 + np.log(np.maximum(hz, 1e-9) / 1000.0) * 27.0 / np.log(6.4), linear)


def _mel_to_hz(mel: np.ndarray) -> np.ndarray:
    linear = 200.0 * mel / 3.0
    return np.where(mel >= 15.0, 1000.0 * np.exp((mel - 15.0) * np.log(6.4) / 27.0), linear)


@cache
def _mel_filters() -> np.ndarray:
    """Whisper's 80 triangular filters over the 201 FFT bins, area-normalised: (201, 80)."""
    edges = _mel_to_hz(np.linspace(_hz_to_mel(np.array(0.0)), _hz_to_mel(np.array(MIC_RATE / 2)), N_MELS + 2))
    bins = np.linspace(0, MIC_RATE // 2, N_FFT // 2 + 1)
    slopes = edges[None, :] - bins[:, None]
    width = np.diff(edges)
    down = -slopes[:, :-2] / width[:-1]
    up = slopes[:, 2:] / width[1:]
    filters = np.maximum(0.0, np.minimum(down, up))
    return filters * (2.0 / (edges[2:] - edges[:-2]))[None, :]


def log_mel(audio: np.ndarray) -> np.ndarray:
    """Whisper's log-mel features of 8 s of float audio (shorter is padded at the end, longer cut),
    as Hugging Face's WhisperFeatureExtractor(chunk_length=8) with do_normalize: (80, 800) float32."""
    x = np.zeros(WINDOW_SAMPLES, np.float32)
    n = min(len(audio), WINDOW_SAMPLES)
    x[:n] = audio[:n]
    x = (x - x.mean()) / np.sqrt(x.var() + 1e-7)  # in float32, as the reference does
    padded = np.pad(x.astype(np.float64), N_FFT // 2, mode="reflect")
    frames = np.lib.stride_tricks.sliding_window_view(padded, N_FFT)[::HOP]
    window = np.hanning(N_FFT + 1)[:-1]  # periodic Hann, as torch.hann_window
    power = np.abs(np.fft.rfft(frames * window, axis=-1)) ** 2
    mel = np.log10(np.maximum(1e-10, power @ _mel_filters())).T[:, :-1]
    mel = np.maximum(mel, mel.max() - 8.0)
    return ((mel + 4.0) / 4.0).astype(np.float32)


def model_path() -> Path:
    """The smart-turn file inside the installed pipecat-ai package, found without importing it."""
    spec = importlib.util.find_spec("pipecat")
    if spec is None or not spec.submodule_search_locations:
        raise EndOfTurnModelMissing(
            "the end-of-turn model ships in the pipecat-ai package: pip install 'parla[turn]' and "
            "pip install --no-deps pipecat-ai==1.14.0 (or set PARLA_FLOOR_END_MODEL=none to end turns by silence alone)"
        )
    path = Path(next(iter(spec.submodule_search_locations))).joinpath(*MODEL_FILE)
    if not path.is_file():
        raise EndOfTurnModelMissing(f"the end-of-turn model is not where pipecat-ai keeps it: {path}")
    return path


def smart_turn(path: Path | None = None) -> TurnCompletion:
    """Pipecat's smart-turn v3.2 on onnxruntime, one thread (it runs once per pause, not per frame).

    The session keeps no memory arena, and what a question allocated goes back to the system after
    it: the model is idle nearly all the time, and its activations are about 30 MB."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.enable_cpu_mem_arena = False
    options.enable_mem_pattern = False
    session = ort.InferenceSession(str(path or model_path()), sess_options=options, providers=["CPUExecutionProvider"])

    def completion(audio: np.ndarray) -> float:
        pcm = audio[-WINDOW_SAMPLES:].astype(np.float32) / 32768.0
        pcm = np.pad(pcm, (WINDOW_SAMPLES - len(pcm), 0))  # the end of the turn at the end of the window
        (out,) = session.run(None, {"input_features": log_mel(pcm)[None]})
        _give_back_freed_memory()
        return float(np.asarray(out).reshape(-1)[0])

    return completion


@cache
def _libc() -> ctypes.CDLL | None:
    name = ctypes.util.find_library("c")
    return ctypes.CDLL(name) if name else None


def _give_back_freed_memory() -> None:
    """glibc keeps freed heap pages for the next allocation; hand them back (other C libraries do)."""
    libc = _libc()
    if libc is not None and hasattr(libc, "malloc_trim"):
        libc.malloc_trim(0)


_worker: ThreadPoolExecutor | None = None
_worker_lock = threading.Lock()


def in_worker(question: Callable[[], float]) -> Future[float]:
    """The process's one end-of-turn thread: questions queue there, never on the event loop."""
    global _worker
    with _worker_lock:
        if _worker is None:
            _worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="parla-end-of-turn")
    return _worker.submit(question)


@dataclass(frozen=True)
class EndRules:
    """The PARLA_FLOOR_END_* settings (voice.config says what each means)."""

    check_ms: int
    threshold: float
    recheck_ms: int = 0  # 0: one question per pause

    @classmethod
    def of(cls, config: VoiceConfig) -> EndRules:
        return cls(
            check_ms=config.floor_end_check_ms,
            threshold=config.floor_end_threshold,
            recheck_ms=config.floor_end_recheck_ms,
        )


@dataclass
class EndOfTurn:
    """The user's turn so far (its last 8 s), and the model's questions in a pause: one, or one every
    `recheck_ms` of silence while it says the user has not finished."""

    rules: EndRules
    model: TurnCompletion
    submit: Submit = in_worker
    _frames: deque[bytes] = field(default_factory=deque)
    _samples: int = 0
    _asked: Future[float] | None = None
    _next_ms: float | None = field(init=False)  # the silence at which to ask next in this pause; None: no more

    def __post_init__(self) -> None:
        self._next_ms = self.rules.check_ms

    def start(self, prefix: list[bytes]) -> None:
        """A new turn, with the audio sent before its onset."""
        self._frames.clear()
        self._samples = 0
        self._asked = None
        self._next_ms = self.rules.check_ms
        for frame in prefix:
            self.hear(frame)

    def hear(self, frame: bytes) -> None:
        """The turn's next frame."""
        self._frames.append(frame)
        self._samples += len(frame) // 2
        while self._samples - len(self._frames[0]) // 2 >= WINDOW_SAMPLES:
            self._samples -= len(self._frames.popleft()) // 2

    def over(self, quiet_ms: float) -> bool:
        """Whether the model says the turn is complete, the user quiet for `quiet_ms` (asked when
        the silence reaches the next question's, looked for at each call after). A question asked
        before the user went on is forgotten."""
        if quiet_ms == 0:
            if self._asked is not None:
                self._asked.cancel()  # if it has not started: it would only be dropped
            self._asked = None
            self._next_ms = self.rules.check_ms
            return False
        if self._next_ms is None or quiet_ms < self._next_ms:
            return False
        if self._asked is None:
            audio = np.frombuffer(b"".join(self._frames), "<i2")
            self._asked = self.submit(lambda: self.model(audio))
        if not self._asked.done():
            return False
        asked, self._asked = self._asked, None
        self._next_ms = quiet_ms + self.rules.recheck_ms if self.rules.recheck_ms else None
        try:
            return asked.result() >= self.rules.threshold
        except Exception:  # the long silence window still ends the turn
            log.exception("the end-of-turn model failed; this turn ends after the silence window")
            return False


def end_of_turn(config: VoiceConfig) -> EndOfTurn | None:
    """The end-of-turn model the settings ask for, or None (silence alone ends a turn). The model
    loads on the worker thread (a few hundred ms of CPU), not on the caller's event loop; the first
    question waits behind it there."""
    if config.floor_end_model == "none":
        return None
    try:
        path = model_path()
    except EndOfTurnModelMissing as e:
        log.warning("turns end after %d ms of silence: %s", config.floor_end_silence_ms, e)
        return None
    in_worker(lambda: _shared_model(path)(np.zeros(0, np.int16)))
    return EndOfTurn(EndRules.of(config), lambda audio: _shared_model(path)(audio))


@cache
def _shared_model(path: Path) -> TurnCompletion:
    """One session per process (8.7 MB of weights)."""
    return smart_turn(path)
