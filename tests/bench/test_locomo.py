"""The switch-fidelity harness on a tiny LoCoMo-shaped data set written here (nothing of LoCoMo's
text): loading by conversation id, evidence to session, the request generator, and one run of the
bench through `parla import` and the search call."""

from __future__ import annotations

import json
import random
import zipfile

import pytest

from bench.locomo import (
    Conversation,
    LocomoError,
    conversation_of,
    evidence_session,
    load,
    request_text,
    requests_for,
    topic_phrase,
)
from bench.switch_fidelity import environment, measure

pytestmark = pytest.mark.tier("fast")


# (time, what Ada says, what Bruno answers) per session: each session has its own subject.
SESSIONS = [
    (
        "9:15 am on 4 March, 2024",
        [
            "Bruno, my sourdough starter finally bubbled after a week of feeding it rye flour.",
            "Great news Ada! Keep the starter warm and feed it twice a day before you bake the loaf.",
            "I baked the first sourdough loaf yesterday, the crust cracked beautifully in the dutch oven.",
            "A cracked crust means good oven spring. Try a longer cold proof in the fridge next time.",
        ],
    ),
    (
        "6:40 pm on 19 March, 2024",
        [
            "I rented a kayak on the lake and paddled to the lighthouse island with my cousin.",
            "That sounds peaceful. Did the wind make the paddling back to the pier hard?",
            "The wind was strong, we capsized near the pier and my phone sank in the water.",
            "Ouch! Next time put the phone in a dry bag strapped to the kayak.",
        ],
    ),
    (
        "11:05 am on 2 April, 2024",
        [
            "I started violin lessons with an old teacher who tunes every string by ear.",
            "Violin is hard at first. Are you practising scales with the bow every evening?",
            "Yes, and my teacher lent me a violin from the nineteenth century for the recital.",
            "Play gently then; an instrument that old deserves a soft case and a humidifier.",
        ],
    ),
]
# A second history about other things, for the foreign requests.
OTHER_SESSIONS = [
    (
        "8:00 am on 6 May, 2024",
        [
            "My tomato seedlings turned yellow on the balcony, Dario.",
            "Yellow leaves often mean too much water, Cleo. Let the soil dry between waterings.",
        ],
    ),
    (
        "7:30 pm on 20 May, 2024",
        [
            "I lost the chess club final with a blunder in the endgame.",
            "Endgames are tough. Study rook endings and the final will go better next season.",
        ],
    ),
]
QA = [
    {"question": "When did Ada bake her first sourdough loaf?", "answer": "x", "evidence": ["D1:3"], "category": 2},
    {"question": "What did Ada feed her sourdough starter?", "answer": "x", "evidence": ["D1:1"], "category": 4},
    {"question": "Where did Ada paddle the kayak?", "answer": "x", "evidence": ["D2:1", "D2:2"], "category": 4},
    {"question": "What happened to Ada's phone near the pier?", "answer": "x", "evidence": ["D2:3"], "category": 1},
    {"question": "Who lent Ada a violin for the recital?", "answer": "x", "evidence": ["D3:3"], "category": 4},
    {"question": "What is Ada's violin teacher like?", "answer": "x", "evidence": ["D3:1"], "category": 4},
    # Left out: a false premise, evidence in two sessions, evidence naming a turn that does not exist.
    {"question": "When did Bruno bake a loaf?", "adversarial_answer": "x", "evidence": ["D1:3"], "category": 5},
    {"question": "What hobbies does Ada have?", "answer": "x", "evidence": ["D1:1", "D3:1"], "category": 1},
    {"question": "What did Ada eat?", "answer": "x", "evidence": ["D2:9"], "category": 4},
]


def raw_conversation(first: str = "Ada", second: str = "Bruno", sessions: list = SESSIONS) -> dict:
    data: dict = {"speaker_a": first, "speaker_b": second}
    for number, (when, lines) in enumerate(sessions, start=1):
        data[f"session_{number}_date_time"] = when
        data[f"session_{number}"] = [
            {"speaker": (first, second)[i % 2], "dia_id": f"D{number}:{i + 1}", "text": text}
            for i, text in enumerate(lines)
        ]
        data[f"session_{number}_summary"] = "not imported"
    # The data set lists times of sessions it does not hold; they are no chats.
    data["session_4_date_time"] = "8:00 pm on 9 April, 2024"
    data["qa"] = QA
    return data


@pytest.fixture
def conversation() -> Conversation:
    data = raw_conversation()
    return conversation_of("conv-7", data, data["qa"])


def test_sessions_become_untitled_chats_with_the_first_speaker_as_user(conversation):
    lines = conversation.import_lines()
    assert [line["created_at"] for line in lines] == [
        "2024-03-04T09:15:00+00:00",
        "2024-03-19T18:40:00+00:00",
        "2024-04-02T11:05:00+00:00",
    ]
    assert all("title" not in line for line in lines)
    assert [t["role"] for t in lines[0]["turns"]] == ["user", "model", "user", "model"]
    assert lines[1]["turns"][2]["text"].startswith("The wind was strong")
    assert len({line["id"] for line in lines}) == 3


def test_evidence_points_to_the_one_session_that_holds_it(conversation):
    sessions = [evidence_session(q, conversation) for q in conversation.questions]
    assert sessions == [1, 1, 2, 2, 3, 3, 1, None, None]


def test_evidence_written_as_one_string_is_read_turn_by_turn():
    data = raw_conversation()
    data["qa"] = [{"question": "Q?", "evidence": ["D2:1; D2:4"], "category": 4}]
    conv = conversation_of("conv-7", data, data["qa"])
    assert evidence_session(conv.questions[0], conv) == 2


def test_requests_skip_false_premises_and_spread_evidence(conversation):
    selection = requests_for(conversation)
    assert (selection.adversarial, selection.spread) == (1, 2)
    assert [(r.question, r.session) for r in selection.requests] == [(0, 1), (1, 1), (2, 2), (3, 2), (4, 3), (5, 3)]


def test_request_wording_is_seeded_and_varies(conversation):
    first = [r.text for r in requests_for(conversation, seed=0).requests]
    assert first == [r.text for r in requests_for(conversation, seed=0).requests]
    assert first != [r.text for r in requests_for(conversation, seed=1).requests]
    # A question keeps its wording when other questions come or go.
    shorter = conversation_of("conv-7", raw_conversation(), QA[:1])
    assert requests_for(shorter).requests[0].text == first[0]
    many = {request_text("When did Ada bake her first sourdough loaf?", random.Random(i)) for i in range(60)}
    assert len(many) >= 8
    assert "go back to when Ada baked her first sourdough loaf" in many
    assert "open the chat where we talked about when Ada baked her first sourdough loaf" in many


@pytest.mark.parametrize(
    ("question", "phrase"),
    [
        ("When did Ada bake her first sourdough loaf?", "when Ada baked her first sourdough loaf"),
        ("What did Ada just finish knitting?", "what Ada just finished knitting"),
        ("What kind of bread does Ada bake?", "what kind of bread Ada bakes"),
        ("How many times has Bruno capsized?", "how many times Bruno has capsized"),
        ("What is Ada's favourite lake?", "Ada's favourite lake"),
        ("What is Ada worried about?", "what Ada is worried about"),
        ("When is Bruno moving to Lisbon?", "when Bruno is moving to Lisbon"),
        ("Why did Ada's cousin go home early?", "why Ada's cousin went home early"),
        ("What do Ada and Bruno both enjoy?", "what Ada and Bruno both enjoy"),
        ("Who lent Ada a violin?", "who lent Ada a violin"),
        ("Would Ada take up rowing?", "whether Ada would take up rowing"),
        ("Did Bruno try the dry bag?", "whether Bruno tried the dry bag"),
        ("When did someone write Ada a letter?", "when someone wrote Ada a letter"),
        ("Where was the recital held?", None),
        ("According to Ada, which lake is best?", None),
    ],
)
def test_questions_become_topic_phrases(question, phrase):
    assert topic_phrase(question) == phrase


def test_a_question_without_a_phrase_is_asked_as_it_is():
    assert "Where was the recital held?" in request_text("Where was the recital held?", random.Random(0))


def test_conversations_are_read_by_id_from_each_published_form(tmp_path):
    other = raw_conversation("Cleo", "Dario")
    archive = tmp_path / "locomo.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("data/dialogs/7.json", json.dumps(raw_conversation()))
        z.writestr("data/dialogs/8.json", json.dumps(other))
    folder = tmp_path / "extracted" / "dialogs"
    folder.mkdir(parents=True)
    (folder / "7.json").write_text(json.dumps(raw_conversation()))
    (folder / "8.json").write_text(json.dumps(other))
    single = tmp_path / "locomo.json"
    samples = [
        {"sample_id": cid, "conversation": {k: v for k, v in data.items() if k != "qa"}, "qa": data["qa"]}
        for cid, data in (("conv-7", raw_conversation()), ("conv-8", other))
    ]
    single.write_text(json.dumps(samples))
    for source in (archive, tmp_path / "extracted", single):
        (conv,) = load(source, ["conv-8"])
        assert (conv.id, conv.speakers, len(conv.sessions), len(conv.questions)) == ("conv-8", ("Cleo", "Dario"), 3, 9)
        with pytest.raises(LocomoError, match="no conversation conv-9"):
            load(source, ["conv-8", "conv-9"])
    with pytest.raises(LocomoError, match="look like conv-26"):
        load(archive, ["26"])


def test_the_bench_imports_through_parla_and_finds_each_session(tmp_path, monkeypatch, capsys):
    for key in ("GEMINI_API_KEY", "GOOGLE_API_KEY", "PARLA_GEMINI_API_KEY"):
        monkeypatch.delenv(key, raising=False)
    first = conversation_of("conv-7", raw_conversation(), QA)
    other_qa = [{"question": "When did Cleo lose the chess final?", "evidence": ["D2:1"], "category": 2}]
    second = conversation_of("conv-8", raw_conversation("Cleo", "Dario", OTHER_SESSIONS), other_qa)
    settings = {"PARLA_CONFIG_FILE": str(tmp_path / "none.toml"), "PARLA_EMBEDDER": "offline"}
    with environment(**settings, PARLA_SUMMARIZER="offline"):
        own, foreign = measure([first, second], tmp_path, seed=0, verbose=False)
    # Asked against its own store, and then against the other one (where nothing is right).
    assert len(own) == 7 and len(foreign) == 7
    assert own.top(1) == 1.0 and own.mrr == 1.0
    assert all(right is None for _, right in foreign.outcomes)
    assert foreign.decided("switch") == [] or foreign.switch_precision == 0
    printed = capsys.readouterr().out
    assert "imported conv-7: 3 chats, 12 turns" in printed
    assert "imported conv-8: 2 chats, 4 turns" in printed
    assert "search: 14 requests" in printed


def test_observations_give_each_speakers_evidence_turns_in_both_forms():
    data = raw_conversation()
    data["session_1_observation"] = {"Ada": [["Ada keeps a rye starter.", "D1:1"], ["Ada bakes.", ["D1:3", "D1:1"]]]}
    data["session_2_observation"] = {"Bruno": [["Bruno gives advice.", "D2:2"]]}
    observed = conversation_of("conv-7", data, data["qa"]).observed
    assert observed == {"Ada": frozenset({"D1:1", "D1:3"}), "Bruno": frozenset({"D2:2"})}
    single = {k: v for k, v in data.items() if not k.endswith("_observation")}
    again = conversation_of("conv-7", single, data["qa"], {"session_1_observation": data["session_1_observation"]})
    assert again.observed == {"Ada": frozenset({"D1:1", "D1:3"})}
    assert [len(s.spoken) for s in again.sessions] == [len(s.turns) for s in again.sessions]
