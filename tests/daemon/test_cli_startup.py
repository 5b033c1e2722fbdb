"""The commands that only read the store start without the model SDKs, an embedder or numpy on the
SQLite store, and `parla search` asks a running daemon instead of loading them (their figures:
bench/cli_startup.py): the module lists are checked in a fresh process."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from asyncio.subprocess import PIPE
from pathlib import Path

import pytest

from parla.records.turn import Turn
from tests.daemon.conftest import running

pytestmark = pytest.mark.tier("process")

ROOT = Path(__file__).resolve().parents[2]
# numpy and dateparser: a fifth of `parla chats`'s start-up before they were left to the code that
# decodes vectors and reads spoken times
HEAVY = (
    "google.genai",
    "supabase",
    "parla.memory.embedders.offline",
    "wordllama",
    "parla.daemon.memory_services",
    "numpy",
    "dateparser",
)
# runs `parla ARGS` in this process, then names the heavy modules it loaded
PROBE = f"""
import json, sys
from parla.daemon.cli import main
sys.argv = ["parla", *sys.argv[1:]]
try:
    main()
except SystemExit as e:
    code = e.code
print(json.dumps({{"code": code, "loaded": [m for m in {HEAVY!r} if m in sys.modules]}}), file=sys.stderr)
"""


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    folder = tmp_path_factory.mktemp("startup")
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("PARLA_") and "API_KEY" not in k},
        "PARLA_STORE_PATH": str(folder / "parla.db"),
        "PARLA_CONFIG_FILE": str(folder / "none.toml"),
        "PARLA_CONTROL_SOCKET": str(folder / "ctl.sock"),
    }
    fixture = ROOT / "tests/data/imports/chatgpt_conversations.json"
    subprocess.run([sys.executable, "-m", "parla.daemon", "import", str(fixture)], env=env, check=True, timeout=300)
    return env


@pytest.mark.parametrize(
    "args",
    [
        ["chats"],
        ["chats", "--json"],
        ["stats", "--json"],
        ["show", "Sourdough timing", "--json"],
        ["export", "--all", "--format", "jsonl"],
        ["config", "show"],
        ["status"],
    ],
)
def test_a_command_that_only_reads_loads_no_sdk_and_no_embedder(store, args):
    # the --json shapes only for a document to check, the control protocol's models only for a status
    shapes = () if "--json" in args else ("parla.daemon.cli.json_shapes",)
    unneeded = (*HEAVY, "parla.daemon.protocol", *shapes)
    probe = PROBE.replace(repr(HEAVY), repr(unneeded))
    done = subprocess.run(
        [sys.executable, "-c", probe, *args], env=store, capture_output=True, text=True, check=False, timeout=120
    )
    report = json.loads(done.stderr.strip().splitlines()[-1])
    assert report["code"] in (0, None) or args == ["status"], done.stderr  # no daemon: status exits 1
    assert report["loaded"] == []


@pytest.mark.parametrize("args", [["status", "--json"], ["config", "show", "--json"], ["--version"]])
def test_a_command_that_needs_no_memory_loads_no_store_either(store, args):
    probe = PROBE.replace(repr(HEAVY), repr((*HEAVY, "parla.memory.store.protocol")))
    done = subprocess.run(
        [sys.executable, "-c", probe, *args], env=store, capture_output=True, text=True, check=False, timeout=120
    )
    assert json.loads(done.stderr.strip().splitlines()[-1])["loaded"] == [], done.stderr


def test_search_without_a_daemon_loads_the_store_and_the_embedder_alone(store):
    # what the chat search does not use: the model SDKs, the summarizers, compaction (and its
    # spoken-date reading) and the model's tools
    unused = (
        "google.genai",
        "supabase",
        "dateparser",
        "parla.memory.compaction.compactor",
        "parla.memory.summarizers",
        "parla.tools.chats",
        "parla.tools.memories",
    )
    probe = PROBE.replace(repr(HEAVY), repr(unused))
    done = subprocess.run(
        [sys.executable, "-c", probe, "search", "sourdough starter", "--json"],
        env=store,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert json.loads(done.stderr.strip().splitlines()[-1]) == {"code": 0, "loaded": []}, done.stderr
    assert json.loads(done.stdout)["candidates"][0]["title"] == "Sourdough timing"


async def test_search_asks_the_running_daemon_and_loads_no_embedder(daemon_settings, tmp_path):
    async with running(daemon_settings) as (_, mem, chat_id):
        await mem.store.append_turns(chat_id, [Turn.of("user", "Planning the trip to Japan: Kyoto temples, a ryokan.")])
        await mem.compactor.compact(chat_id)
        expected = await mem.search.search("the Japan trip", limit=5)
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("PARLA_") and "API_KEY" not in k},
            "PARLA_STORE_PATH": str(daemon_settings.store_path),
            "PARLA_CONTROL_SOCKET": str(daemon_settings.control_socket),
            "PARLA_CONFIG_FILE": str(tmp_path / "none.toml"),
        }
        child = await asyncio.create_subprocess_exec(
            sys.executable, "-c", PROBE, "search", "the Japan trip", "--json", env=env, stdout=PIPE, stderr=PIPE
        )
        out, err = await asyncio.wait_for(child.communicate(), 120)
    assert json.loads(err.decode().strip().splitlines()[-1]) == {"code": 0, "loaded": []}, err.decode()
    found = json.loads(out)
    assert found["decision"] == expected.decision
    assert [c["chat_id"] for c in found["candidates"]] == [c.chat_id for c in expected.candidates]


# runs `parla ARGS` through the script, counting the cyclic collections that ran while the command
# line loaded (before `main` exists) and the objects frozen by the time the command runs
SCRIPT_PROBE = """
import gc, json, sys
loading = []
frozen = []


def watch(phase, info):
    cli = sys.modules.get("parla.daemon.cli")
    if phase == "start" and cli is not None and not hasattr(cli, "main"):
        loading.append(info["generation"])


gc.callbacks.append(watch)
import parla.daemon.__main__ as entry
sys.argv = ["parla", *sys.argv[1:]]
try:
    entry.script()
except SystemExit as e:
    code = e.code
print(json.dumps({"code": code, "collections": len(loading), "frozen": gc.get_freeze_count()}), file=sys.stderr)
"""


def test_the_script_loads_the_command_line_without_collecting_and_freezes_it(store):
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT_PROBE, "chats"],
        env=store,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    report = json.loads(done.stderr.strip().splitlines()[-1])
    assert report["code"] in (0, None), done.stderr
    # about a hundred collections walked the loaded modules again and again before
    assert report["collections"] == 0
    assert report["frozen"] > 10_000  # the loaded modules' objects: about 70,000 for `parla chats`


def test_the_script_does_not_look_for_pydantic_plugins(store, tmp_path):
    # a distribution that declares a pydantic plugin: pydantic imports it when it builds its
    # first model, unless told there are none
    (tmp_path / "probe_plugin.py").write_text(
        "import os, pathlib\npathlib.Path(os.environ['PROBE_MARK']).touch()\nplugin = object()\n", encoding="utf-8"
    )
    info = tmp_path / "probe_plugin-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: probe-plugin\nVersion: 1.0\n", encoding="utf-8")
    (info / "entry_points.txt").write_text("[pydantic]\nprobe = probe_plugin:plugin\n", encoding="utf-8")
    mark = tmp_path / "loaded"
    env = {**store, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)]), "PROBE_MARK": str(mark)}
    env.pop("PYDANTIC_DISABLE_PLUGINS", None)
    through_main = "import sys; from parla.daemon.cli import main; sys.argv = ['parla', 'chats']; main()"
    subprocess.run([sys.executable, "-c", through_main], env=env, capture_output=True, check=False, timeout=120)
    assert mark.exists()  # found where the script's process would find it
    mark.unlink()
    done = subprocess.run(
        [sys.executable, "-m", "parla.daemon", "chats"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert not mark.exists()
