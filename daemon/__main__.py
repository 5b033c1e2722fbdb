"""The `parla` process: the installed script and `python -m parla.daemon`.

Nothing here imports the command line until the start-up is arranged, so what is arranged holds
for every module the command loads (the figures: bench/cli_startup.py)."""

from __future__ import annotations

import gc
import os


def script() -> None:
    """`parla.daemon.cli.main` in a process of its own.

    - No pydantic plugins: pydantic looks for them in the entry points of every installed
      distribution when it builds its first model, and Parla uses none
      (https://docs.pydantic.dev/latest/concepts/plugins/: `PYDANTIC_DISABLE_PLUGINS`). A user's
      own setting of the variable is kept.
    - No cyclic collection while the modules load: importing them makes objects that live as
      long as the process (modules, classes, pydantic's validators, typer's commands), and the
      collector ran about a hundred times over them, walking them again each time. Once loaded
      they are frozen, out of the collector's way while the command runs. Not in `main`, which a
      test may call: its own objects would be frozen too."""
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    gc.disable()
    try:
        from .cli import main
    finally:
        gc.freeze()
        gc.enable()
    main()


if __name__ == "__main__":
    script()
