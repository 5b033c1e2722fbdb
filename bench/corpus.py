"""Synthetic chats for benchmarks and the large-import test: varied topics, realistic turn
lengths, deterministic for a seed."""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

SUBJECTS = [
    ("a trip to {place}", ["flights", "hotel", "museum", "train pass", "budget", "restaurant", "weather"]),
    ("fixing a bug in my {lang} service", ["deadlock", "timeout", "memory leak", "test", "logs", "deploy"]),
    ("training for a {race}", ["intervals", "long run", "knee pain", "shoes", "pace", "nutrition"]),
    ("cooking {dish} for friends", ["recipe", "oven", "spices", "dessert", "wine", "vegetarian guest"]),
    ("renovating the {room}", ["tiles", "electrician", "budget", "paint", "permits", "cabinets"]),
    ("learning to play {piece} on the piano", ["left hand", "pedal", "tempo", "ornaments", "teacher"]),
    ("my {pet} who will not stop barking", ["leash", "crate", "vet", "treats", "walks", "neighbours"]),
    ("preparing the {exam} exam", ["schedule", "practice tests", "flashcards", "stress", "deadline"]),
]
FILLS = {
    "place": ["Japan", "Portugal", "Iceland", "Peru", "Morocco", "Norway", "Vietnam", "Chile"],
    "lang": ["Python", "Go", "Rust", "Java", "TypeScript"],
    "race": ["half marathon", "triathlon", "10k race", "cycling sportive"],
    "dish": ["risotto", "paella", "ramen", "lasagna", "curry"],
    "room": ["kitchen", "bathroom", "attic", "garden shed"],
    "piece": ["a Chopin nocturne", "a Bach invention", "a Satie gymnopedie", "a Debussy arabesque"],
    "pet": ["beagle", "terrier", "parrot", "husky"],
    "exam": ["driving", "bar", "medical board", "French B2"],
}
MONTHS = ["January", "March", "April", "June", "September", "November"]


def _topic(rng: random.Random) -> tuple[str, list[str]]:
    template, aspects = rng.choice(SUBJECTS)
    key = template[template.index("{") + 1 : template.index("}")]
    return template.format(**{key: rng.choice(FILLS[key])}), aspects


def chat_record(rng: random.Random, index: int, turns: int, start: datetime) -> dict:
    topic, aspects = _topic(rng)
    out = []
    for i in range(turns):
        aspect = rng.choice(aspects)
        if i % 2 == 0:
            text = (
                f"About {topic}: what should I do about the {aspect}? I have {rng.randint(2, 900)} euros "
                f"and time until {rng.choice(MONTHS)} {rng.randint(1, 28)}."
            )
        else:
            text = (
                f"For {topic}, sort out the {aspect} first. Compare at least {rng.randint(2, 5)} options, "
                f"write down the costs, and decide by the end of the week so the rest can follow. "
                f"Many people forget the {rng.choice(aspects)} until it is too late."
            )
        out.append(
            {
                "role": "user" if i % 2 == 0 else "model",
                "text": text,
                "created_at": (start + timedelta(minutes=i)).isoformat(),
            }
        )
    return {"id": f"synthetic-{index}", "turns": out}


def write_jsonl(path: Path, chats: int, turns: tuple[int, int] = (4, 60), seed: int = 7) -> Path:
    rng = random.Random(seed)
    start = datetime(2026, 1, 1, tzinfo=UTC)
    with path.open("w", encoding="utf-8") as f:
        for i in range(chats):
            record = chat_record(rng, i, rng.randint(*turns), start + timedelta(hours=7 * i))
            f.write(json.dumps(record) + "\n")
    return path
