"""Durable-statement detection on LoCoMo's observations: `python -m bench.locomo_observations --data PATH`.

LoCoMo's authors annotated each session with `observation`s: facts about each speaker, each citing
the dialogue turns it rests on. Taking the first speaker as the user (as the other LoCoMo benches
do), the turns cited for the user's facts are statements worth keeping that nobody here wrote.
Measured on the development conversations, with the offline detector (the rules of
`memory.language.importance` and the general reading of `memory.language.durable`), turn by turn as compaction
reads them:
- recall: the share of those evidence turns that become a pin and profile entry (a durable
  statement) or an important turn (importance 7 or more);
- on the user's other turns (small talk, opinions, questions: no observation cites them), the
  share that the detector takes for durable statements, and precision over all it takes.

The data is CC BY-NC: read from PATH, nothing written. Prints figures only.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bench.locomo import DEVELOPMENT, LocomoError, load
from bench.report import Table, parse
from parla.memory.language.importance import IMPORTANT, durable_statements, turn_importance
from parla.records.turn import Turn


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True, help="locomo10.zip, its extracted folder, or locomo10.json")
    args, out = parse(parser)
    try:
        conversations = load(args.data.resolve(), list(DEVELOPMENT))
    except LocomoError as e:
        sys.exit(f"locomo_observations: {e}")
    evidence = found_statement = found_important = 0
    others = others_taken = 0
    for conversation in conversations:
        cited = conversation.observed.get(conversation.speakers[0], frozenset())
        for session in conversation.sessions:
            for turn, dialogue_id in zip(session.turns, session.spoken, strict=True):
                if turn["role"] != "user":
                    continue
                statement = bool(durable_statements(turn["text"]))
                important = statement or turn_importance(Turn.of("user", turn["text"])) >= IMPORTANT
                if dialogue_id in cited:
                    evidence += 1
                    found_statement += statement
                    found_important += important
                else:
                    others += 1
                    others_taken += statement
    taken = found_statement + others_taken
    table = Table(
        ["the user's turns", "turns", "taken for durable statements (a pin and profile entry)", "an important turn"],
        title=f"LoCoMo observations ({', '.join(DEVELOPMENT)})",
    )
    table.row(
        "cited as evidence of a fact",
        evidence,
        f"{found_statement / evidence:.3f}",
        f"{found_important / evidence:.3f}",
    )
    table.row("the others", others, f"{others_taken / others:.3f}", "")
    out.table(table)
    out.line(f"precision of what is taken: {found_statement / taken if taken else float('nan'):.3f}")


if __name__ == "__main__":
    main()
