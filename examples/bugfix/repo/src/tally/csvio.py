"""Invoice line items from CSV exports (one item per line, a header line first)."""

from __future__ import annotations

from tally.invoice import LineItem
from tally.money import parse_amount

REQUIRED = ("sku", "description", "quantity", "unit_price")


def _split_row(line: str, delimiter: str) -> list[str]:
    """The cells of one line, surrounding spaces removed."""
    return [cell.strip() for cell in line.split(delimiter)]


def _item(row: dict[str, str], number: int) -> LineItem:
    try:
        quantity = int(row["quantity"])
        price = parse_amount(row["unit_price"])
    except ValueError as error:
        raise ValueError(f"line {number}: {error}") from None
    return LineItem(row["sku"], row["description"], quantity, price)


def read_items(text: str, delimiter: str = ",") -> list[LineItem]:
    """Parse a CSV export into line items.

    The header names the columns (any order, any case); ``sku``, ``description``,
    ``quantity`` and ``unit_price`` are required, other columns are ignored. A row with
    the wrong number of cells is an error naming its line.
    """
    lines = text.splitlines()
    header = [name.lower() for name in _split_row(lines[0], delimiter)]
    missing = [name for name in REQUIRED if name not in header]
    if missing:
        raise ValueError(f"line 1: missing column(s) {', '.join(missing)}")
    items = []
    for number, line in enumerate(lines[1:], start=2):
        cells = _split_row(line, delimiter)
        if len(cells) != len(header):
            raise ValueError(f"line {number}: expected {len(header)} cells, got {len(cells)}")
        items.append(_item(dict(zip(header, cells)), number))
    return items
