"""Parla's wheel installed beside PyPI's python-daemon, which also installs a top-level `daemon`:
both stay importable, `parla` and the service's module (`python -m parla.daemon`) run.

The wheel is built from this checkout and installed without its dependencies into a fresh
virtualenv; the dependencies come from the interpreter running the tests, appended after the new
virtualenv's own site-packages (so a `daemon` or `parla` there cannot win). python-daemon is
installed by pip from the package index (or pip's cache) into the new virtualenv itself.
"""

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
