"""Tables that fit the terminal: one line a row (or the lines a cell is given, each cut alike).
Columns of short values keep their width; text columns share what is left and are cut with an
ellipsis; when even that leaves a text column too narrow to read, the least useful columns are
left out first."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rich.cells import cell_len
from rich.console import JustifyMethod
from rich.table import Table
from rich.text import Text

from ..terminal_text import visible

# Each column costs its padding (one space either side) and one border character, plus one border.
_COLUMN_COST = 3


@dataclass(frozen=True)
class Column:
    header: str
    text: bool = False  # shares the room left, cut with an ellipsis; else as wide as its values
    least: int = 0  # a text column narrower than this is not worth showing its row: drop others first
    drop: int | None = None  # the order columns are left out in when they do not fit (1 first); None: kept
    justify: JustifyMethod = "left"


# A cell: one line of plain text, or its lines (a title and what matched under it).
Cell = str | tuple[str, ...]


def fitted(columns: Sequence[Column], rows: Sequence[Sequence[Cell]], width: int) -> Table:
    """A table of `rows` (plain text, a cell a column, shown as it is) no wider than `width`."""
    lines = [[(cell,) if isinstance(cell, str) else cell for cell in row] for row in rows]
    cells = [[tuple(visible(line) for line in cell) for cell in row] for row in lines]  # as the consoles show text
    # a column that may be left out is, when it has nothing to show
    kept = [i for i, c in enumerate(columns) if c.drop is None or any(any(r[i]) for r in cells)]
    natural = [
        max([cell_len(columns[i].header), *(cell_len(line) for r in cells for line in r[i])])
        for i in range(len(columns))
    ]

    def room(chosen: list[int]) -> int:
        fixed = sum(natural[i] for i in chosen if not columns[i].text)
        return width - 1 - _COLUMN_COST * len(chosen) - fixed

    def short_of_room(chosen: list[int]) -> bool:
        texts = [i for i in chosen if columns[i].text]
        return room(chosen) < sum(min(columns[i].least, natural[i]) for i in texts)

    droppable = sorted((c.drop, i) for i, c in enumerate(columns) if c.drop is not None)
    for _, i in droppable:
        if not short_of_room(kept):
            break
        if i in kept:
            kept.remove(i)
    widths = _share({i: natural[i] for i in kept if columns[i].text}, max(room(kept), 0))
    table = Table()
    for i in kept:
        c = columns[i]
        table.add_column(
            c.header, width=widths.get(i, natural[i]), no_wrap=True, overflow="ellipsis", justify=c.justify
        )
    for row in cells:
        table.add_row(*(Text("\n".join(row[i]), no_wrap=True, overflow="ellipsis") for i in kept))
    return table


def _share(wanted: dict[int, int], room: int) -> dict[int, int]:
    """Widths for the text columns: each its own width when they all fit, else the narrow ones
    whole and the rest an equal share of what remains."""
    widths: dict[int, int] = {}
    left = dict(wanted)
    while left:
        share = max(room // len(left), 1)
        fits = {i: w for i, w in left.items() if w <= share}
        if not fits:
            widths.update((i, share) for i in left)
            break
        widths.update(fits)
        room -= sum(fits.values())
        left = {i: w for i, w in left.items() if i not in fits}
    return widths
