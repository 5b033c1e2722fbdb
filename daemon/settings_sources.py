"""Where each setting came from (default, the config file, `.env`, the environment), and what
people see about settings: one-line errors that blame the place the bad value was written,
warnings about names that are not settings (with the closest one), and `parla config show`."""

from __future__ import annotations

import difflib
import json
import os
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from dotenv import dotenv_values
from pydantic import AliasChoices, BaseModel, SecretStr, ValidationError

from parla.kernel.owners import others_can_change

from .errors import SettingsError
from .settings import CONFIG_FILE_VARIABLE, Settings, config_file

SourceKind = Literal["default", "file", ".env", "environment", "command line"]
DOTENV = Path(".env")
OPTION_OF = {"log_level": "-v/-q"}  # pydantic-settings reads it from the working directory


@dataclass(frozen=True)
class Source:
    kind: SourceKind
    where: str = ""  # the variable, or the file and line

    def __str__(self) -> str:
        return {
            "default": "the default",
            "file": self.where,
            ".env": f"{self.where} in {DOTENV.resolve()}",
            "environment": f"{self.where} in the environment",
            "command line": f"{self.where} on the command line",
        }[self.kind]


def env_names(name: str) -> list[str]:
    """The variables a setting is read from (most have one, the key has three)."""
    alias = Settings.model_fields[name].validation_alias
    if isinstance(alias, AliasChoices):
        return [str(choice) for choice in alias.choices]
    return [f"PARLA_{name.upper()}"]


def _file_settings() -> dict[str, Any]:
    path = config_file()
    if not path.is_file():
        return {}
    try:
        with path.open("rb") as f:
            return tomllib.load(f)
    except tomllib.TOMLDecodeError as e:
        raise SettingsError(f"{path} is not valid TOML: {e}") from None
    except (OSError, UnicodeDecodeError) as e:
        raise SettingsError(f"cannot read the config file {path}: {e}") from None


def _dotenv_names() -> set[str]:
    if not DOTENV.is_file():
        return set()
    return {key.upper() for key in dotenv_values(DOTENV)}


def _line_of(path: Path, key: str) -> int | None:
    # `key = ...`, or the header of its table (`[[mcp_servers]]`)
    pattern = re.compile(rf"^\s*({re.escape(key)}\s*=|\[\[?\s*{re.escape(key)}\s*\]\]?\s*(#.*)?$)")
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if pattern.match(line):
            return number
    return None


def sources(given: dict[str, Any] | None = None) -> dict[str, Source]:
    """Each setting's source, by the precedence pydantic-settings applies: arguments (the `given`
    overrides from command-line options), environment, .env, file."""
    environment = {key.upper() for key in os.environ}
    dotenv = _dotenv_names()
    in_file = _file_settings()
    path = config_file()
    found = {}
    for name in Settings.model_fields:
        names = env_names(name)
        if name in (given or {}):
            found[name] = Source("command line", OPTION_OF.get(name, name))
        elif set_in := next((n for n in names if n.upper() in environment), None):
            found[name] = Source("environment", set_in)
        elif set_in := next((n for n in names if n.upper() in dotenv), None):
            found[name] = Source(".env", set_in)
        elif name in in_file:
            line = _line_of(path, name)
            found[name] = Source("file", f"{path}" + (f", line {line}" if line else ""))
        else:
            found[name] = Source("default")
    return found


def overrides(log_level: str | None = None) -> dict[str, Any]:
    """Settings the global command-line options set (`-v`, `-q`: the log level)."""
    return {"log_level": log_level} if log_level else {}


def check_config_files(path: Path) -> None:
    """Refuse a config file (`path`, or a `.env` in the working folder), or its folder, that another
    user could change: whoever writes it chooses where the Gemini key goes (live_url) and what the
    daemon runs with."""
    files = [(path, "config file")]
    if DOTENV.is_file():
        files.append((DOTENV.absolute(), ".env file"))
    for file, what in files:
        for target, where in ((file.parent, f"folder of the {what}"), (file, what)):
            if why := others_can_change(target):
                mode = "700" if target == file.parent else "600"
                raise SettingsError(
                    f"the {where} {target} is not used: {why}; make it yours alone (chmod {mode} {target}) "
                    "and check what it holds"
                )


def load(log_level: str | None = None) -> Settings:
    """The settings, or a SettingsError that says which value is wrong and where it was set."""
    check_config_files(config_file())
    _file_settings()  # a broken file is named before pydantic-settings reads it
    given = overrides(log_level)
    try:
        return Settings(**given)
    except ValidationError as e:
        raise SettingsError(explain(e, given)) from None


def explain(error: ValidationError, given: dict[str, Any] | None = None) -> str:
    problems = error.errors()
    first = problems[0]
    message = first["msg"].removeprefix("Value error, ")
    more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
    origin = sources(given)
    if first["loc"]:
        name = _field_of(str(first["loc"][0]))
        return f"setting {name}, from {origin[name]}: {message}{more}"
    # a check across settings (tail below summary_window_size, ...): say where each one came from
    given = first["input"] if isinstance(first.get("input"), dict) else {}
    at = {name: m.start() for name in Settings.model_fields if (m := re.search(rf"\b{name}\b", message))}
    named = sorted(at, key=at.__getitem__)
    where = "; ".join(f"{name} from {origin[name]}" for name in named or [_field_of(k) for k in given])
    return f"settings do not fit together: {message}{more}" + (f" ({where})" if where else "")


def _field_of(key: str) -> str:
    if key in Settings.model_fields:
        return key
    return next((n for n in Settings.model_fields if key.upper() in env_names(n)), key)


def _closest(name: str, known: list[str]) -> str:
    match = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    return f"; did you mean {match[0]}?" if match else ""


def warnings() -> list[str]:
    """Names that look like settings but are not: PARLA_ variables (environment and .env) and
    keys of the config file. pydantic-settings ignores them silently, which hides a typo."""
    variables = sorted({n.upper() for name in Settings.model_fields for n in env_names(name)} | {CONFIG_FILE_VARIABLE})
    found = []
    for origin, names in (("in the environment", set(os.environ)), (f"in {DOTENV.resolve()}", _dotenv_names())):
        for name in sorted(names):
            if name.upper().startswith("PARLA_") and name.upper() not in variables:
                found.append(f"{name} {origin} is not a Parla setting{_closest(name.upper(), variables)}")
    fields = list(Settings.model_fields)
    for key in sorted(_file_settings()):
        if key not in fields:
            found.append(f"{key} in {config_file()} is not a Parla setting{_closest(key, fields)}")
    return found


_DEFAULT_SAYS = re.compile(r"default: (.+?)\)?\.?$")


def unset_default(settings: Settings, name: str) -> tuple[Any, str] | None:
    """For a setting left unset (None) whose default is another's: the value used and whose it is;
    else what its description says the default is, with no value. None when there is nothing to say."""
    from parla.records.calibration import BY_NAME

    embedder = settings.embedder_in_use
    if name in (calibrated := BY_NAME[embedder].of_setting()):
        return calibrated[name], f"the {'Gemini' if embedder == 'gemini' else 'offline'} embedder's own"
    if name == "supabase_copy_path":
        return str(settings.copy_path), "beside store_path"
    said = _DEFAULT_SAYS.search(Settings.model_fields[name].description or "")
    return (None, said.group(1)) if said else None


def shown(value: Any) -> Any:
    """A setting's value for `parla config show`, as JSON: secrets masked (in an MCP server's
    environment too), paths as text, a table (an MCP server) as an object."""
    if isinstance(value, SecretStr):
        return "********" if value.get_secret_value() else ""
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, BaseModel):
        return {name: shown(getattr(value, name)) for name in type(value).model_fields}
    if isinstance(value, dict):
        return {str(key): shown(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [shown(item) for item in value]
    return value


_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def toml_value(value: Any) -> str:
    """A shown value as the config file writes it: a table inline (`{ name = "files", ... }`, its
    unset fields left out: TOML has no null), a string in double quotes."""
    if isinstance(value, dict):
        pairs = [
            f"{key if _BARE_KEY.match(key) else json.dumps(key, ensure_ascii=False)} = {toml_value(item)}"
            for key, item in value.items()
            if item is not None
        ]
        return "{ " + ", ".join(pairs) + " }" if pairs else "{}"
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(item) for item in value) + "]"
    return json.dumps(value, ensure_ascii=False)  # a JSON string, number or boolean is TOML's too
