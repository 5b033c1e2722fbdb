"""What Parla writes for its user alone, whatever the umask (under umask 000 a folder would be
made 0777 and a file 0666, and another user could rewrite the config or the service unit, or read
an export): folders 0700, files 0600. The `parla` command also sets its umask to 077 at start, so
the files libraries make for it (SQLite's among them) are private too; these helpers make that
hold wherever they are called from, and for a file that was already there."""

from __future__ import annotations

import os
import stat
from pathlib import Path


def private_folder(folder: Path) -> None:
    """Make `folder` and each missing parent 0700 (a folder that exists is left as it is)."""
    missing = []
    while not folder.exists() and folder != folder.parent:  # (the working folder may have been removed)
        missing.append(folder)
        folder = folder.parent
    for made in reversed(missing):
        made.mkdir(mode=0o700, exist_ok=True)
        os.chmod(made, 0o700)  # mkdir's mode passes through the umask


def write_private(path: Path, text: str) -> None:
    """Write `text` to `path`, the file 0600 before anything is written to it, a file that was
    there included. A device (/dev/null) keeps its mode."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        if stat.S_ISREG(os.fstat(fd).st_mode):
            os.fchmod(fd, 0o600)
        f.write(text)
