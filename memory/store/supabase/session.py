"""Authentication with Supabase: signing in (`parla login`), the kind of an API key, and where the
signed-in session is kept: one JSON file, mode 0600, written atomically.

supabase-py persists its session through a storage object; this one is a file in the user's
config dir, so `parla login` signs in once and the daemon refreshes the session (the refresh
token rotates on every refresh) without asking again. A session file another user owns or may
write is not read: its tokens decide whose account the user's chats go to. `parla login` writes a
new one of the user's in its place.
"""

from __future__ import annotations

import json
from pathlib import Path

import httpx
from supabase import AsyncClientOptions, acreate_client
from supabase_auth import AsyncSupportedStorage
from supabase_auth.errors import AuthError, AuthInvalidJwtError, AuthRetryableError
from supabase_auth.helpers import decode_jwt

from parla.kernel.owners import others_can_change, replace_private

from ...errors import ForeignFile, StoreError, StoreOffline


class FileSessionStorage(AsyncSupportedStorage):
    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)

    def _read(self) -> dict[str, str]:
        if others_can_change(self.path):  # not read; the new session replaces it whole
            return {}
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    async def get_item(self, key: str) -> str | None:
        if why := others_can_change(self.path):
            raise ForeignFile(
                f"the Supabase session file {self.path} is not used: {why}, and a session decides whose "
                "account your chats go to; run `parla login` (it writes a session of yours in its place)"
            )
        return self._read().get(key)

    async def set_item(self, key: str, value: str) -> None:
        data = self._read()
        data[key] = value
        self._write(data)

    async def remove_item(self, key: str) -> None:
        data = self._read()
        if data.pop(key, None) is None:
            return
        if data:
            self._write(data)
        else:
            self.path.unlink(missing_ok=True)

    def _write(self, data: dict[str, str]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # 0600 from its first byte: the refresh token is never readable by others, not even briefly
        replace_private(self.path, json.dumps(data))


def jwt_role(key: str) -> str | None:
    """The role claim of a legacy JWT API key, None for other key formats."""
    try:
        return decode_jwt(key)["payload"].get("role")
    except AuthInvalidJwtError:
        return None


async def sign_in(url: str, key: str, email: str, password: str, session_file: Path) -> str:
    """Sign in with email and password (`parla login`); the session goes to `session_file` (0600).
    Returns the user id."""
    async with httpx.AsyncClient(timeout=30.0) as http:
        options = AsyncClientOptions(
            persist_session=True,
            auto_refresh_token=False,
            storage=FileSessionStorage(session_file),
            postgrest_client_retry=False,
            httpx_client=http,
        )
        try:
            client = await acreate_client(url, key, options)
            response = await client.auth.sign_in_with_password({"email": email, "password": password})
        except AuthRetryableError as e:
            raise StoreOffline(f"Supabase at {url} is unreachable: {e.message}") from e
        except AuthError as e:
            raise StoreError(f"Supabase refused the sign-in: {e.message}") from e
        except httpx.TransportError as e:
            raise StoreOffline(f"Supabase at {url} is unreachable: {e}") from e
    if response.user is None or response.session is None:
        raise StoreError("Supabase answered the sign-in without a session: is the email confirmed?")
    return response.user.id
