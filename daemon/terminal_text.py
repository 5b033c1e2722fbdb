"""Text from chats on a terminal: shown with its control characters made visible, so that a title
or turn cannot drive the terminal it is printed on (see `visible`)."""

from __future__ import annotations

import json
from typing import Any

# Shown as less and `cat -v` show them: a title or turn holding an OSC 52 (clipboard write), OSC 8
# (hyperlink) or OSC 0 (window title) sequence, a C1 control or a bidi override reaches the
# terminal as text. Newlines and tabs stay.
_BIDI_CONTROLS = (*range(0x202A, 0x202F), *range(0x2066, 0x206A))
_VISIBLE = str.maketrans(
    {c: f"^{chr(c + 64)}" for c in range(0x20) if chr(c) not in "\n\t"}
    | {0x7F: "^?"}
    | {c: f"<U+{c:04X}>" for c in (*range(0x80, 0xA0), *_BIDI_CONTROLS)}
)
# JSON leaves DEL, the C1 controls and bidi overrides raw (the C0 ones it escapes); as \u escapes
# they read back the same.
_JSON_ESCAPED = str.maketrans({c: f"\\u{c:04x}" for c in (0x7F, *range(0x80, 0xA0), *_BIDI_CONTROLS)})


def visible(text: str) -> str:
    """`text` with its control characters made visible (`^[` for ESC, `<U+009B>` for a C1 one)."""
    return text.translate(_VISIBLE)


def json_text(data: Any, indent: int | None = None) -> str:
    """JSON that cannot drive a terminal it is printed on, and reads back unchanged."""
    return json.dumps(data, ensure_ascii=False, indent=indent).translate(_JSON_ESCAPED)
