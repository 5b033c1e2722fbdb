"""The rule modules the store imports compile their patterns when a rule first reads a sentence, not
when they are imported: `parla chats` and the other commands that only read the store import them
and never match one (their figures: bench/cli_startup.py). Counted in a fresh process, where no
other test has used a rule yet."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytestmark = pytest.mark.tier("process")


# counts the patterns compiled (`re.compile`, which the lazy patterns call too), while importing
# the rule modules and then while scoring one turn
PROBE = """
import json, re, sys
import parla.records.turn, parla.memory.language.text, parla.records.pins  # what they build on
compiled = []
plain = re.compile
re.compile = lambda pattern, flags=0: compiled.append(pattern) or plain(pattern, flags)
import parla.memory.language.importance, parla.memory.language.durable, parla.memory.language.auto_pins, parla.records.profile
on_import = len(compiled)
from parla.memory.language.importance import turn_importance
from parla.records.turn import Turn
score = turn_importance(Turn.of("user", "My daughter is called Ana and we live in Turin."))
print(json.dumps({"on_import": on_import, "on_use": len(compiled) - on_import, "score": score}))
"""


def test_importing_the_rule_modules_compiles_none_of_their_patterns():
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, check=True, timeout=120)
    report = json.loads(done.stdout)
    assert report["on_import"] == 0
    assert report["on_use"] > 0 and report["score"] == 8.0  # the first rule read compiles them: "family"
