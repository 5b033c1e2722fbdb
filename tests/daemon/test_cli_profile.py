"""`parla profile`: what Parla knows about the user, listed, added to, edited, forgotten and restored."""

from __future__ import annotations

import asyncio
import json

import pytest

from parla.daemon.memory_services import open_memory
from parla.daemon.settings import Settings
from parla.records.turn import Turn

pytestmark = pytest.mark.tier("fast")


def test_profile_lists_adds_edits_forgets_and_restores(parla):
    assert "knows nothing about you yet" in parla("profile", "list").stdout
    parla("profile", "add", "I live in Turin", "--importance", "7")
    parla("profile", "add", "My daughter is called Sofia", "--importance", "8")
    listed = json.loads(parla("profile", "list", "--json").stdout)
    assert [(e["number"], e["text"], e["about"]) for e in listed] == [
        (1, "My daughter is called Sofia", "daughter name"),
        (2, "I live in Turin", "home"),
    ]
    # a newer entry about the same thing supersedes the older, which stays as history
    parla("profile", "add", "I moved to Milan", "--about", "home", "--importance", "7")
    assert [e["text"] for e in json.loads(parla("profile", "list", "--json").stdout)] == [
        "My daughter is called Sofia",
        "I moved to Milan",
    ]
    history = {e["text"]: e["state"] for e in json.loads(parla("profile", "list", "--all", "--json").stdout)}
    assert history == {
        "My daughter is called Sofia": "current",
        "I moved to Milan": "current",
        "I live in Turin": "superseded",
    }

    assert "Edited" in parla("profile", "edit", "1", "My daughter is called Sofia Maria", "--importance", "9").stdout
    assert "Forgot" in parla("profile", "forget", "2").stdout
    assert [e["text"] for e in json.loads(parla("profile", "list", "--json").stdout)] == [
        "My daughter is called Sofia Maria"
    ]
    milan = next(e for e in json.loads(parla("profile", "list", "--all", "--json").stdout) if "Milan" in e["text"])
    assert milan["state"] == "forgotten"
    parla("profile", "restore", milan["id"][:8])
    assert len(json.loads(parla("profile", "list", "--json").stdout)) == 2
    assert "Sofia" in parla("profile", "list").stdout

    missing = parla("profile", "forget", "no-such-entry", ok=False)
    assert missing.exit_code == 1 and "parla profile list --all" in missing.stderr


def test_recall_finds_what_was_said_in_any_chat_with_its_date(parla, tmp_path):
    lines = [
        {
            "id": "trip",
            "created_at": "2026-03-02T10:00:00+00:00",
            "turns": [
                {"role": "user", "text": "We booked the ferry to Hydra for the ninth of May."},
                {"role": "model", "text": "Lovely, the ferry to Hydra is a beautiful ride."},
            ],
        },
        {
            "id": "garden",
            "created_at": "2026-04-11T10:00:00+00:00",
            "turns": [
                {"role": "user", "text": "The tomato seedlings on the balcony need more sun."},
                {"role": "model", "text": "Move them to the south side of the balcony."},
            ],
        },
    ]
    source = tmp_path / "chats.jsonl"
    source.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    parla("import", str(source))
    found = json.loads(parla("recall", "when is the ferry to Hydra", "--json").stdout)
    said = next(r for r in found if r["kind"] in ("turn", "turns") and "ferry to Hydra" in r["text"])
    assert said["said_at"].startswith("2026-03-02")
    garden = json.loads(parla("chats", "--json").stdout)
    only = next(c["id"] for c in garden if c["id"] != said["chat_id"])
    inside = json.loads(parla("recall", "ferry to Hydra", "--chat", only, "--json").stdout)
    assert all(r["chat_id"] == only for r in inside)
    assert "ferry" in parla("recall", "the ferry").stdout


# -- what Parla learns about the user from imported and stored chats ----------------------------

# Everyday conversations as a new user brings them from ChatGPT: most are short; the facts are
# said in passing, inside questions.
EVERYDAY = [
    ("Cheap dinners", ["Any ideas for a cheap dinner for two?", "Something without an oven please."]),
    ("New GP", ["I'm registering with a new GP. I'm allergic to penicillin, what should I tell them?"]),
    ("Cat food", ["My cat is fourteen, is dry food still fine for her?"]),
    ("Weekend", ["What is on in town this weekend?"]),
    ("Spanish", ["How do I say 'the bill, please' in Spanish?", "And 'thank you very much'?"]),
]


def _chatgpt_export(path, conversations):
    """A ChatGPT `conversations.json` as the export writes it: each conversation a tree of messages."""
    exported = []
    for n, (title, asked) in enumerate(conversations):
        mapping = {"root": {"id": "root", "message": None, "parent": None, "children": []}}
        parent = "root"
        for i, text in enumerate(asked):
            for role, said in (("user", text), ("assistant", f"Here is what I would suggest for that ({i}).")):
                node = f"c{n}-{role}-{i}"
                mapping[parent]["children"].append(node)
                mapping[node] = {
                    "id": node,
                    "parent": parent,
                    "children": [],
                    "message": {
                        "id": node,
                        "author": {"role": role},
                        "create_time": 1715000000 + 86400 * n + 60 * i + (30 if role == "assistant" else 0),
                        "content": {"content_type": "text", "parts": [said]},
                        "recipient": "all",
                    },
                }
                parent = node
        exported.append(
            {
                "title": title,
                "id": f"conv-{n}",
                "create_time": 1715000000 + 86400 * n,
                "mapping": mapping,
                "current_node": parent,
            }
        )
    path.write_text(json.dumps(exported))
    return path


def test_an_import_of_short_everyday_chats_fills_the_profile(parla, tmp_path):
    export = _chatgpt_export(tmp_path / "conversations.json", EVERYDAY)
    report = json.loads(parla("import", str(export), "--json").stdout)
    assert report["imported"] == len(EVERYDAY) and report["profile_entries"] == 2
    listed = {e["text"] for e in json.loads(parla("profile", "list", "--json").stdout)}
    assert listed == {"I'm allergic to penicillin", "My cat is fourteen"}
    # importing the same export again learns nothing twice
    again = json.loads(parla("import", str(export), "--json").stdout)
    assert again["profile_entries"] == 0 and len(json.loads(parla("profile", "list", "--json").stdout)) == 2


def test_an_import_whose_summaries_are_queued_fills_the_profile_at_once(parla, tmp_path, monkeypatch):
    # more turns than the offline summarizer makes here: the summaries wait for the daemon's queue
    monkeypatch.setenv("PARLA_IMPORT_OFFLINE_NOW_TURNS", "2")
    export = _chatgpt_export(tmp_path / "conversations.json", EVERYDAY)
    result = parla("import", str(export), "--json")
    report = json.loads(result.stdout)
    assert report["summaries"]["state"] == "queued" and report["profile_entries"] == 2
    assert "I'm allergic to penicillin" in {e["text"] for e in json.loads(parla("profile", "list", "--json").stdout)}


def test_backfill_reads_turns_summarised_before_the_profile_read_them(parla, tmp_path):
    """A store whose chats were summarised before (here with the profile turned off): backfill
    reads every user turn, not only the ones still unsummarised."""
    from tests.conftest import make_turns

    async def store_and_summarise() -> None:
        async with open_memory(Settings(profile_auto=False)) as mem:
            turns = make_turns(40, prefix="T")
            turns[2] = Turn.of("user", "By the way, I'm allergic to penicillin, can you remember that?")
            chat = (await mem.store.create_chat(turns=turns)).chat
            await mem.compactor.compact(chat.id)
            assert (await mem.store.get_chat(chat.id)).summarized_through > 3  # the statement is folded

    asyncio.run(store_and_summarise())
    assert "knows nothing about you yet" in parla("profile", "list").stdout
    counts = json.loads(parla("memory", "backfill", "--json").stdout)
    assert counts["profile_entries"] == 1
    (entry,) = json.loads(parla("profile", "list", "--json").stdout)
    assert entry["text"] == "I'm allergic to penicillin"
    assert json.loads(parla("memory", "backfill", "--json").stdout)["profile_entries"] == 0


def test_recall_numbers_turns_from_one_and_names_what_it_found_as_the_guides_do(parla, tmp_path):
    # a title found took the number 0 ("turns 0-2"), and the text said `summary_text`, `chunk`
    # and "turns 12-12" where `show` says turn 12 and the guides "the description" (issue 42, item 17)
    trip = [
        {"role": "user" if n % 2 else "model", "text": f"Turn {n}: the ferry to Naxos, booking number {n}."}
        for n in range(1, 13)
    ]
    pasta = [{"role": "user", "text": "How long do I boil penne?"}, {"role": "model", "text": "About 11 minutes."}]
    source = tmp_path / "chats.jsonl"
    source.write_text(
        json.dumps({"id": "trip", "title": "Greek islands trip", "turns": trip})
        + "\n"
        + json.dumps({"id": "pasta", "title": "Cooking pasta", "turns": pasta})
        + "\n"
    )
    parla("import", str(source))
    texts = []
    for request, chat in (("Greek islands trip", None), ("cooking pasta penne", None), ("booking number 12", "trip")):
        scope = ["--chat", chat] if chat else []
        for r in json.loads(parla("recall", request, *scope, "--json").stdout):
            if r["turns"]:
                first, _, last = r["turns"].partition("-")
                assert int(first) >= 1 and (not last or int(last) > int(first)), r["turns"]
        texts.append(parla("recall", request, *scope).stdout)
    text = "\n".join(texts)
    headers = [line for line in text.splitlines() if line.startswith("chat ")]
    internal = (" turns", " turn", " chunk", " meta", " facts", " summary_text")
    assert headers and not [h for h in headers if "summary_text" in h or h.endswith(internal)]
    assert "turns 0" not in text and "12-12" not in text
    assert "the title" in text and "the description" in text and "the chunk summary of turns 1-10" in text
