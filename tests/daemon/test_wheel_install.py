"""Parla's wheel installed beside PyPI's python-daemon, which also installs a top-level `daemon`:
both stay importable, `parla` and the service's module (`python -m parla.daemon`) run, and a first user's
commands work from the installed script: `--version`, `chats`, `import`, `doctor`.

The wheel is built from this checkout and installed without its dependencies into a fresh
virtualenv; the dependencies come from the interpreter running the tests, appended after the new
virtualenv's own site-packages (so a `daemon` or `parla` there cannot win). python-daemon is
installed by pip from the package index (or pip's cache) into the new virtualenv itself.
"""

import json
import os
import shutil
import site
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.tier("process")

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("memory", "tools", "voice", "daemon", "ui")


def run(*args: str | Path, cwd: Path, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        [str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, timeout=180, check=False
    )
    assert done.returncode == 0, f"{args}: {done.stdout[-2000:]}{done.stderr[-2000:]}"
    return done.stdout


def test_the_wheel_installs_beside_python_daemon(tmp_path):
    wheels, venv, source = tmp_path / "wheels", tmp_path / "venv", tmp_path / "source"
    # pip builds in the source folder (build/, *.egg-info): a copy keeps the checkout clean and no
    # stale build/ from an earlier build can slip modules into the wheel
    for folder in ("supabase/migrations", "parla", *PACKAGES):
        shutil.copytree(ROOT / folder, source / folder, symlinks=True, ignore=shutil.ignore_patterns("__pycache__"))
    for file in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / file, source / file)
    run(sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", wheels, source, cwd=tmp_path)
    [wheel] = wheels.glob("parla-*.whl")
    run(sys.executable, "-m", "venv", "--without-pip", venv, cwd=tmp_path)
    py = venv / "bin" / "python"
    # --ignore-installed: pip run this way also sees the running interpreter's packages (its parla among them)
    pip = [sys.executable, "-m", "pip", "--python", py, "install", "-q", "--ignore-installed"]
    run(*pip, "python-daemon>=3", cwd=tmp_path)
    run(*pip, "--no-deps", wheel, cwd=tmp_path)
    own = Path(run(py, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))", cwd=tmp_path).strip())
    host = [p for p in [*site.getsitepackages(), site.getusersitepackages()] if Path(p).is_dir()]
    (own / "zz_host_packages.pth").write_text("\n".join(host) + "\n")
    # Outside the checkout and without PYTHONPATH: only what was installed is found.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"HOME": str(tmp_path)}

    script = "import daemon, parla; print(daemon.__file__, parla.__file__, daemon.DaemonContext.__name__)"
    theirs, ours, context = run(py, "-c", script, cwd=tmp_path, env=env).split()
    assert Path(theirs) == own / "daemon" / "__init__.py" and context == "DaemonContext"  # python-daemon's
    assert Path(ours) == own / "parla" / "__init__.py"
    script = "from parla.memory.store.supabase.schema import migrations_dir; print(migrations_dir())"
    assert Path(run(py, "-c", script, cwd=tmp_path, env=env).strip()) == venv / "share/parla/supabase/migrations"
    # the memory inspector's templates and the files it serves (htmx among them) are in the wheel
    script = "from parla.ui.app import HERE; print(*(f.is_file() for f in (HERE / 'static/htmx.min.js', HERE / 'templates/chat.html')))"
    assert run(py, "-c", script, cwd=tmp_path, env=env).split() == ["True", "True"]
    assert "Usage: parla" in run(venv / "bin" / "parla", "--help", cwd=tmp_path, env=env)
    assert "Usage: parla" in run(py, "-m", "parla.daemon", "--help", cwd=tmp_path, env=env)
    assert "Usage: parla run" in run(py, "-m", "parla.daemon", "run", "--help", cwd=tmp_path, env=env)

    # a first user's commands, from the installed script alone: its store in a data folder of its own
    parla = venv / "bin" / "parla"
    env |= {"XDG_DATA_HOME": str(tmp_path / "data"), "XDG_CONFIG_HOME": str(tmp_path / "config")}
    assert run(parla, "--version", cwd=tmp_path, env=env).startswith("parla ")
    assert "No chats yet" in run(parla, "chats", cwd=tmp_path, env=env)
    export = ROOT / "tests" / "data" / "imports" / "chatgpt_conversations.json"
    assert "Imported 2 chats" in run(parla, "import", export, cwd=tmp_path, env=env)
    assert len(json.loads(run(parla, "chats", "--json", cwd=tmp_path, env=env))) == 2
    # it fails here for what this machine lacks (a key, audio devices) and says so, one line each
    doctor = subprocess.run(
        [parla, "doctor"], check=False, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=180
    )
    assert doctor.returncode in (0, 1) and "Traceback" not in doctor.stderr, doctor.stderr
    assert "ok   store: SQLite" in doctor.stdout and "2 chats" in doctor.stdout, doctor.stdout
