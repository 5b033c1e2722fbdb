"""`parla profile`: what Parla knows about the user, listed, added to, edited, forgotten and restored."""

from __future__ import annotations

import json


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
