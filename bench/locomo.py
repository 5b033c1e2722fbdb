"""LoCoMo conversations as a Parla user's history, and switch requests made from their QA.

LoCoMo (snap-research/locomo on GitHub) holds long conversations between the same two people
over months, one session per sitting, with questions whose evidence names the dialogue turns
("D3:5" = session 3, turn 5) that answer them. Its authors license it CC BY-NC 4.0, so the data is
read from wherever the user put it and nothing of its text belongs in this repository.

A session becomes one imported chat (the first speaker is the user, the second the assistant,
untitled so Parla titles it as it titles any chat). A question whose evidence lies in one session
becomes a spoken request for that chat: the question is turned into a topic phrase ("When did Ann
bake her first loaf?" -> "when Ann baked her first loaf") and put into one of several ways people ask for
a chat, chosen by a seeded generator so the same data always gives the same requests.
"""

from __future__ import annotations

import json
import random
import re
import zipfile
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

# Development conversations; the others in the data set are kept for a final held-out test.
DEVELOPMENT = ("conv-26", "conv-30", "conv-41", "conv-42", "conv-43")
# Question categories in the QA annotations; 5 is adversarial (its premise is false), so it
# asks for nothing a chat holds.
ADVERSARIAL = 5

_SESSION = re.compile(r"session_(\d+)")
_EVIDENCE = re.compile(r"D(\d+):(\d+)")
_EVIDENCE_ID = re.compile(r"D\d+:\d+")


class LocomoError(ValueError):
    """The data is not where or what the bench expects."""


@dataclass(frozen=True)
class Session:
    number: int
    started: datetime
    turns: list[dict[str, str]]  # {"role", "text"}
    dialogue_ids: frozenset[str]
    # the dialogue id of each imported turn, in order: turn seq n is spoken[n - 1]
    spoken: tuple[str, ...] = ()


@dataclass(frozen=True)
class Question:
    index: int
    text: str
    category: int
    evidence: list[str]


@dataclass(frozen=True)
class Conversation:
    id: str
    speakers: tuple[str, str]
    sessions: list[Session]
    questions: list[Question]
    # per speaker, the dialogue ids LoCoMo's `observation` annotations cite as evidence of a fact
    observed: dict[str, frozenset[str]] = field(default_factory=dict)

    def import_lines(self) -> list[dict[str, Any]]:
        """One `parla import` line per session, untitled."""
        return [
            {"id": f"locomo:{self.id}:session-{s.number}", "created_at": s.started.isoformat(), "turns": s.turns}
            for s in self.sessions
        ]

    @property
    def last_activity(self) -> datetime:
        return max(s.started for s in self.sessions)


@dataclass(frozen=True)
class Request:
    conversation: str
    question: int
    session: int
    category: int
    text: str


def parse_date(value: str) -> datetime:
    """LoCoMo's session times read like "1:56 pm on 8 May, 2023"."""
    return datetime.strptime(value.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def observed_ids(observations: dict[str, Any]) -> dict[str, frozenset[str]]:
    """Per speaker, the dialogue ids cited by `session_N_observation` entries ({speaker: [[text, ids], ...]})."""
    cited: dict[str, set[str]] = {}
    for per_session in observations.values():
        for speaker, items in (per_session or {}).items():
            for item in items:
                cited.setdefault(speaker, set()).update(_EVIDENCE_ID.findall(json.dumps(item[1:])))
    return {speaker: frozenset(ids) for speaker, ids in cited.items()}


def conversation_of(
    conversation_id: str, data: dict[str, Any], qa: list[dict[str, Any]], observation: dict[str, Any] | None = None
) -> Conversation:
    """`observation` is the single-file form's; the per-conversation files keep it in `data`."""
    speakers = (data["speaker_a"], data["speaker_b"])
    if observation is None:
        observation = {k: v for k, v in data.items() if k.endswith("_observation")}
    sessions = []
    for key, turns in data.items():
        match = _SESSION.fullmatch(key)
        if not match or not isinstance(turns, list) or not turns:
            continue
        number = int(match.group(1))
        sessions.append(
            Session(
                number=number,
                started=parse_date(data[f"{key}_date_time"]),
                turns=[
                    {"role": "user" if t["speaker"] == speakers[0] else "model", "text": t["text"]}
                    for t in turns
                    if t.get("text", "").strip()
                ],
                dialogue_ids=frozenset(t["dia_id"] for t in turns),
                spoken=tuple(t["dia_id"] for t in turns if t.get("text", "").strip()),
            )
        )
    sessions.sort(key=lambda s: s.number)
    questions = [
        Question(index=i, text=q["question"], category=int(q["category"]), evidence=list(q.get("evidence", [])))
        for i, q in enumerate(qa)
    ]
    return Conversation(conversation_id, speakers, sessions, questions, observed_ids(observation))


def _number(conversation_id: str) -> str:
    match = re.fullmatch(r"conv-(\d+)", conversation_id)
    if not match:
        raise LocomoError(f"conversation ids look like conv-26, not {conversation_id!r}")
    return match.group(1)


def _from_archive(path: Path, wanted: list[str]) -> dict[str, Conversation]:
    """The published zip holds one file per conversation, named by its number (26.json); only
    the wanted members are read."""
    found = {}
    with zipfile.ZipFile(path) as archive:
        members = {Path(name).name: name for name in archive.namelist() if name.endswith(".json")}
        for cid in wanted:
            name = members.get(f"{_number(cid)}.json")
            if name is not None:
                data = json.loads(archive.read(name))
                found[cid] = conversation_of(cid, data, data["qa"])
    return found


def _from_directory(path: Path, wanted: list[str]) -> dict[str, Conversation]:
    found = {}
    for cid in wanted:
        matches = sorted(path.rglob(f"{_number(cid)}.json"))
        if matches:
            data = json.loads(matches[0].read_text(encoding="utf-8"))
            found[cid] = conversation_of(cid, data, data["qa"])
    return found


def _from_list(path: Path, wanted: list[str]) -> dict[str, Conversation]:
    """The single-file form (locomo10.json): a list of {"sample_id", "conversation", "qa"}."""
    found = {}
    for sample in json.loads(path.read_text(encoding="utf-8")):
        cid = sample.get("sample_id")
        if cid in wanted:
            found[cid] = conversation_of(cid, sample["conversation"], sample["qa"], sample.get("observation", {}))
    return found


def load(path: Path, wanted: list[str]) -> list[Conversation]:
    """The wanted conversations, in the order asked, from the zip, a directory it was extracted
    to, or the single-file JSON form."""
    if not path.exists():
        raise LocomoError(f"{path} does not exist: download data/locomo10.zip from snap-research/locomo")
    if path.is_dir():
        found = _from_directory(path, wanted)
    elif zipfile.is_zipfile(path):
        found = _from_archive(path, wanted)
    else:
        found = _from_list(path, wanted)
    missing = [cid for cid in wanted if cid not in found]
    if missing:
        raise LocomoError(f"{path} has no conversation {', '.join(missing)}")
    return [found[cid] for cid in wanted]


def evidence_session(question: Question, conversation: Conversation) -> int | None:
    """The one session that holds all of the question's evidence, or None when the evidence is
    spread over several sessions, missing, or names turns the conversation does not have."""
    sessions = {s.number: s for s in conversation.sessions}
    found = set()
    for item in question.evidence:
        for session, turn in _EVIDENCE.findall(item):
            number = int(session)
            if number not in sessions or f"D{number}:{turn}" not in sessions[number].dialogue_ids:
                return None
            found.add(number)
    return found.pop() if len(found) == 1 else None


# -- questions into topic phrases ------------------------------------------------------------

_AUX = {"did", "does", "do", "is", "was", "are", "were", "has", "have", "had", "would", "will", "can", "could"}
_WH = {"what", "which", "who", "whom", "whose", "where", "when", "why", "how"}
_COPULA = {"is", "was", "are", "were"}
_PRONOUNS = {"he", "she", "they", "it", "we", "you", "i", "someone", "somebody", "anyone", "everyone"}
_DETERMINERS = {"the", "a", "an", "his", "her", "their", "its", "this", "that", "these", "those", "both"}
# Adverbs between the subject and the verb ("did Ann just finish").
_ADVERBS = {
    "just",
    "first",
    "recently",
    "also",
    "ever",
    "usually",
    "often",
    "once",
    "still",
    "really",
    "actually",
    "never",
    "always",
    "likely",
    "finally",
    "last",
}
_IRREGULAR = {
    "be": "was",
    "become": "became",
    "begin": "began",
    "bring": "brought",
    "build": "built",
    "buy": "bought",
    "catch": "caught",
    "choose": "chose",
    "come": "came",
    "do": "did",
    "draw": "drew",
    "drink": "drank",
    "drive": "drove",
    "eat": "ate",
    "fall": "fell",
    "feel": "felt",
    "find": "found",
    "fly": "flew",
    "forget": "forgot",
    "get": "got",
    "give": "gave",
    "go": "went",
    "grow": "grew",
    "have": "had",
    "hear": "heard",
    "hold": "held",
    "keep": "kept",
    "know": "knew",
    "leave": "left",
    "lend": "lent",
    "lose": "lost",
    "make": "made",
    "meet": "met",
    "pay": "paid",
    "put": "put",
    "read": "read",
    "ride": "rode",
    "run": "ran",
    "say": "said",
    "see": "saw",
    "sell": "sold",
    "send": "sent",
    "set": "set",
    "sing": "sang",
    "sit": "sat",
    "speak": "spoke",
    "spend": "spent",
    "stand": "stood",
    "swim": "swam",
    "take": "took",
    "teach": "taught",
    "tell": "told",
    "think": "thought",
    "throw": "threw",
    "undergo": "underwent",
    "understand": "understood",
    "wear": "wore",
    "win": "won",
    "write": "wrote",
    "plan": "planned",
    "stop": "stopped",
    "shop": "shopped",
    "drop": "dropped",
    "adopt": "adopted",
}


def past(verb: str) -> str:
    if verb in _IRREGULAR:
        return _IRREGULAR[verb]
    if verb.endswith("e"):
        return verb + "d"
    if len(verb) > 2 and verb.endswith("y") and verb[-2] not in "aeiou":
        return verb[:-1] + "ied"
    return verb + "ed"


def third_person(verb: str) -> str:
    if verb in {"have", "do", "go"}:
        return {"have": "has", "do": "does", "go": "goes"}[verb]
    if verb.endswith(("s", "sh", "ch", "x", "z")):
        return verb + "es"
    if len(verb) > 2 and verb.endswith("y") and verb[-2] not in "aeiou":
        return verb[:-1] + "ies"
    return verb + "s"


def _subject(words: list[str]) -> int:
    """How many leading words form the subject: a name (or two joined by "and"), a pronoun, or a
    determiner and its noun, each optionally owning the next noun ("Ann's brother")."""
    if not words:
        return 0
    first = words[0]
    if first.lower() in _PRONOUNS:
        n = 1
    elif first[:1].isupper():
        n = 1
        if len(words) > 2 and words[1] == "and" and words[2][:1].isupper():
            n = 3
    elif first.lower() in _DETERMINERS and len(words) > 1:
        n = 2
    else:
        return 0
    if words[n - 1].endswith(("'s", "s'")) and len(words) > n:
        n += 1
    return n


def _singular(subject: list[str]) -> bool:
    return "and" not in subject and subject[-1].lower() not in {"they", "we", "you", "i", "both"}


def _clause(aux: str, rest: list[str]) -> list[str] | None:
    """`aux` + subject + rest of a question as a statement: "did Ann paint it" -> "Ann painted it"."""
    n = _subject(rest)
    if n == 0:
        return None
    subject, tail = rest[:n], rest[n:]
    if aux not in {"did", "does", "do"}:
        return subject + [aux] + tail
    adverbs = 0
    while adverbs < len(tail) and tail[adverbs].lower() in _ADVERBS:
        adverbs += 1
    if adverbs == len(tail):
        return None
    verb = tail[adverbs]
    if aux == "did":
        verb = past(verb)
    elif aux == "does" and _singular(subject):
        verb = third_person(verb)
    return subject + tail[:adverbs] + [verb] + tail[adverbs + 1 :]


def topic_phrase(question: str) -> str | None:
    """A question turned into what a person says after "the chat about": an indirect question or
    a noun phrase. None when the question has a shape this does not know."""
    words = question.strip().rstrip("?").strip().split()
    if not words:
        return None
    lowered = [w.lower() for w in words]
    if lowered[0] in _AUX:
        clause = _clause(lowered[0], words[1:])
        return " ".join(["whether", *clause]) if clause else None
    if lowered[0] not in _WH:
        return None
    split = next((i for i, w in enumerate(lowered) if w in _AUX), None)
    if split is None or split > 4:
        # The wh-word is the subject ("who helped Ann move"): already an indirect question.
        return " ".join([lowered[0], *words[1:]])
    wh, aux, rest = [lowered[0], *words[1:split]], lowered[split], words[split + 1 :]
    if aux in _COPULA and not _clause_follows(rest):
        # "What is Ann's job" -> "Ann's job"; where the noun phrase ends is unknown, so only a
        # bare "what"/"who" question becomes one.
        return " ".join(rest) if wh in (["what"], ["who"]) and rest else None
    clause = _clause(aux, rest)
    return " ".join(wh + clause) if clause else None


def _clause_follows(rest: list[str]) -> bool:
    """After "what is", a bare name starts a clause ("Ann excited about"); a possessive or a
    determiner starts the noun phrase asked about ("Ann's job", "the book Ann read")."""
    return bool(rest) and rest[0][:1].isupper() and not rest[0].endswith(("'s", "s'")) and len(rest) > 1


# -- requests ---------------------------------------------------------------------------------

TEMPLATES = (
    "open the chat where we talked about {topic}",
    "go back to the chat about {topic}",
    "switch to the conversation about {topic}",
    "can you find the chat where we discussed {topic}?",
    "take me back to the conversation on {topic}",
    "let's pick up the chat about {topic} again",
    "the one where we talked about {topic}",
    "I want to continue our chat about {topic}",
    "go back to when we talked about {topic}",
    "find the conversation about {topic}",
)
# When the topic is a "when" clause it can stand after "go back to" on its own.
WHEN_TEMPLATES = ("go back to {topic}", "take me back to {topic}")
# A question this cannot rephrase is asked as it is.
QUESTION_TEMPLATES = ('find the chat that answers "{question}"', "which chat was it: {question}")


def request_text(question: str, rng: random.Random) -> str:
    topic = topic_phrase(question)
    if topic is None:
        return rng.choice(QUESTION_TEMPLATES).format(question=question.strip())
    templates = TEMPLATES + WHEN_TEMPLATES if topic.startswith("when ") else TEMPLATES
    return rng.choice(templates).format(topic=topic)


@dataclass
class Selection:
    requests: list[Request]
    adversarial: int = 0  # skipped: a false premise asks for no chat
    spread: int = 0  # skipped: evidence in several sessions, or none that exists


def requests_for(conversation: Conversation, seed: int = 0) -> Selection:
    """One request per answerable single-session question; each question gets its own generator
    seeded by the conversation and question, so subsets and other conversations do not shift it."""
    selection = Selection(requests=[])
    for q in conversation.questions:
        if q.category == ADVERSARIAL:
            selection.adversarial += 1
            continue
        session = evidence_session(q, conversation)
        if session is None:
            selection.spread += 1
            continue
        rng = random.Random(f"{seed}:{conversation.id}:{q.index}")
        text = request_text(q.text, rng)
        selection.requests.append(Request(conversation.id, q.index, session, q.category, text))
    return selection
