"""Where the SQLite vector index loses the exact search's best chats: for the switch requests and
recall questions of `bench.scale_probe`, each of the exact top 10 chats' place at the index's two
cheap stages, with the store's own index files and chat numbers.

- sign bits: its place among all chats ordered by their best Hamming distance (ties by chat
  number, as the index orders them): the index keeps it when the place is within its shortlist;
- 8 bits: its place among the shortlisted chats ordered by their best 8-bit similarity: the index
  keeps it when the place is within its finalists.

Prints, for the index's shortlist and finalists at this size (and for other sizes given with
`--shortlist` / `--finalists`), the agreement they give, and the places the misses had.

    python -m bench.scale_misses STORE [--dim 768] [--shortlist 300 1200] [--finalists 20 40]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sqlite3
from pathlib import Path

import numpy as np

from bench.memory import percentile
from bench.scale_options import TOP
from bench.scale_probe import embedder_of, requests
from parla.memory.config import MemoryConfig
from parla.memory.store.sqlite.rows import vector_matrix
from parla.memory.store.sqlite.vector_file import candidate_counts, sign_bits
from parla.memory.store.sqlite.vectors import vector_blobs


def load(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """Every vector of the store with its chat's number in the index (`vector_chats`)."""
    db = sqlite3.connect(path)
    number = dict(db.execute("SELECT chat_id, number FROM vector_chats").fetchall())
    chats, blobs = [], []
    for chat_id, blob in vector_blobs(db):
        chats.append(number[chat_id])
        blobs.append(blob)
    db.close()
    return np.array(chats), vector_matrix(blobs).reshape(len(blobs), -1)


def best_per_chat(chat: np.ndarray, values: np.ndarray, worst: float) -> np.ndarray:
    best = np.full(int(chat.max()) + 1, worst, dtype=np.float64)
    if worst < 0:
        np.maximum.at(best, chat, values)
    else:
        np.minimum.at(best, chat, values)
    return best


def places(query: np.ndarray, chat: np.ndarray, matrix: np.ndarray, bits: np.ndarray, codes: np.ndarray) -> dict:
    """The exact top 10 chats (with those tied to the 10th within float noise), each chat's place
    by sign bits, and each chat's best 8-bit similarity."""
    exact = best_per_chat(chat, matrix @ query, -np.inf)
    tenth = np.sort(exact)[-TOP]
    wanted = np.flatnonzero(exact >= tenth - 1e-5)
    distance = np.bitwise_count(bits ^ sign_bits(query)[0]).sum(axis=1)
    hamming = best_per_chat(chat, distance, np.inf)
    hamming_order = np.argsort(hamming, kind="stable")
    hamming_place = np.empty(len(hamming), dtype=np.int64)
    hamming_place[hamming_order] = np.arange(len(hamming))
    coarse = best_per_chat(chat, codes @ query, -np.inf)
    return {"wanted": wanted, "hamming_place": hamming_place, "hamming_order": hamming_order, "coarse": coarse}


def kept(found: dict, shortlist: int, finalists: int) -> tuple[float, str | None, int, int]:
    """What a shortlist and finalists give for one query: its agreement (counted as
    `bench.scale_options` counts it: the finalists ranked exactly, a chat tied with the exact 10th
    counting), the stage that lost a chat (None when none was lost), and the shortlist and
    finalists the query needed (the places of the 10th best of the exact top chats)."""
    wanted = found["wanted"]
    hamming = np.sort(found["hamming_place"][wanted])
    short = found["hamming_order"][:shortlist]
    order = short[np.argsort(-found["coarse"][short], kind="stable")]
    coarse_places = np.flatnonzero(np.isin(order, wanted))
    hits = min(TOP, int(np.isin(order[:finalists], wanted).sum()))
    lost = None if hits == TOP else "sign bits" if len(coarse_places) < TOP else "8 bits"
    needed_final = int(coarse_places[TOP - 1]) + 1 if len(coarse_places) >= TOP else -1
    return hits / TOP, lost, int(hamming[TOP - 1]) + 1, needed_final


async def main(path: Path, dim: int, shortlists: list[int], finalists: list[int]) -> None:
    embedder = embedder_of(dim)
    switches, questions = requests()
    queries = {
        "switch": list(await embedder.embed(switches, "query")),
        "recall": list(await embedder.embed(questions, "query")),
    }
    chat, matrix = load(path)
    bits = sign_bits(matrix)
    scale = np.abs(matrix).max(axis=1) / 127
    codes = np.round(matrix / np.where(scale == 0, 1, scale)[:, None]).astype(np.int8).astype(np.float32)
    codes *= scale[:, None]
    chats = len(np.unique(chat))
    index_shortlist, index_finalists = candidate_counts(MemoryConfig(), TOP, chats)
    settings = sorted({(index_shortlist, index_finalists), *((s, f) for s in shortlists for f in finalists)})
    found = {kind: [places(q, chat, matrix, bits, codes) for q in vectors] for kind, vectors in queries.items()}
    for shortlist, final in settings:
        line: dict[str, object] = {"chats": chats, "rows": len(matrix), "shortlist": shortlist, "finalists": final}
        line["the index's own"] = (shortlist, final) == (index_shortlist, index_finalists)
        for kind, each in found.items():
            results = [kept(f, shortlist, final) for f in each]
            needed_short = [r[2] for r in results]
            needed_final = [r[3] for r in results if r[3] > 0]
            line[f"{kind}_agreement"] = round(float(np.mean([r[0] for r in results])), 4)
            line[f"{kind}_queries_short_by_sign_bits"] = sum(1 for r in results if r[1] == "sign bits")
            line[f"{kind}_queries_short_by_8_bits"] = sum(1 for r in results if r[1] == "8 bits")
            line[f"{kind}_shortlist_needed_p50_p95_max"] = [
                percentile(needed_short, 0.5),
                percentile(needed_short, 0.95),
                max(needed_short),
            ]
            if needed_final:
                line[f"{kind}_finalists_needed_p50_p95_max"] = [
                    percentile(needed_final, 0.5),
                    percentile(needed_final, 0.95),
                    max(needed_final),
                ]
            line[f"{kind}_tied_with_the_10th_p50"] = percentile([len(f["wanted"]) for f in each], 0.5)
        print(json.dumps(line))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("store", type=Path)
    parser.add_argument("--dim", type=int, default=256)
    parser.add_argument("--shortlist", type=int, nargs="*", default=[])
    parser.add_argument("--finalists", type=int, nargs="*", default=[])
    args = parser.parse_args()
    asyncio.run(main(args.store, args.dim, args.shortlist, args.finalists))
