"""Whose a file is. What decides what Parla does (a config file, a store and its outbox, the local
copy, a Supabase session) must be its user's, or root's (a file the administrator wrote): whoever
owns a file chooses what it holds, so one of another user is refused, not used. The config, the
memory and the daemon all check, and memory imports nothing of the daemon, so the rule lives here."""

from __future__ import annotations

import os
import stat
from pathlib import Path

# Root may own them: root can change any file anyway.
TRUSTED_OWNERS = (0,)


def other_owner(path: Path) -> int | None:
    """The uid of the other user `path` belongs to; None when it is the user's (or root's), or
    missing."""
    try:
        uid = path.stat().st_uid
    except FileNotFoundError:
        return None
    return None if uid == os.getuid() or uid in TRUSTED_OWNERS else uid


def others_can_change(path: Path) -> str | None:
    """Why another user could change what `path` (a file, or its folder) holds, or None. Others may
    not write it, unless a folder's sticky bit keeps them from replacing a file they do not own
    (/tmp)."""
    if (uid := other_owner(path)) is not None:
        return f"it belongs to another user (uid {uid})"
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    if st.st_mode & 0o022 and not (stat.S_ISDIR(st.st_mode) and st.st_mode & stat.S_ISVTX):
        return f"other users can write to it (mode {stat.S_IMODE(st.st_mode):o})"
    return None


def replace_private(path: Path, text: str) -> None:
    """Replace `path` with `text` at once (a crash leaves the old file or the new one, never half),
    the file the user's alone (0600) from its first byte, whatever the umask."""
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        os.fchmod(fd, 0o600)  # a .tmp left by a crash keeps its mode through O_CREAT
        f.write(text)
        f.flush()
        os.fsync(fd)
    os.replace(tmp, path)
