"""How the user lists their MCP servers in the config file (`[[mcp_servers]]` in config.toml):
a stdio command with its arguments and environment, or a streamable HTTP address; the tools of it
Parla may offer (all when `allow` is unset); and the limits of a call."""

from __future__ import annotations

import hashlib

from pydantic import BaseModel, Field, SecretStr, model_validator


class McpServerConfig(BaseModel):
    name: str = Field(
        pattern=r"^[a-zA-Z][a-zA-Z0-9_]{0,19}$",
        description="The server's name, the prefix of its tools as the model sees them (name__tool).",
    )
    command: str | None = Field(None, description="The stdio server's executable.")
    args: list[str] = Field(default_factory=list, description="Its arguments.")
    # Secrets (tokens, keys) go here: never logged, never shown.
    env: dict[str, SecretStr] = Field(default_factory=dict, description="Its environment, over Parla's.")
    url: str | None = Field(None, description="A streamable HTTP server's address, instead of a command.")
    allow: list[str] | None = Field(None, description="The tools offered to the model; unset: all of them.")
    call_timeout_s: float = Field(15.0, gt=0, description="Seconds a call may take before it is abandoned.")
    start_timeout_s: float = Field(
        30.0, gt=0, description="Seconds the server may take to start and list its tools before it is started again."
    )
    max_result_chars: int = Field(4000, ge=100, description="A result longer than this is cut.")
    restart_delay_s: float = Field(1.0, gt=0, description="First wait before a server that died is restarted.")
    restart_max_delay_s: float = Field(60.0, gt=0, description="The longest wait between restarts.")

    @model_validator(mode="after")
    def _one_transport(self) -> McpServerConfig:
        if (self.command is None) == (self.url is None):
            raise ValueError(f"MCP server {self.name!r}: give either a command (stdio) or a url (streamable HTTP)")
        return self

    def fingerprint(self) -> str:
        """A digest of these settings, to tell whether a running daemon read the same ones (the
        environment's values are masked in the dump, so they are left out)."""
        return hashlib.sha256(self.model_dump_json().encode()).hexdigest()[:12]
