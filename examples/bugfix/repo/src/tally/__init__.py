"""tally: small, dependency-free helpers for invoicing scripts."""

from tally.csvio import read_items
from tally.dates import business_days, due_date, parse_date, parse_terms
from tally.invoice import Invoice, LineItem
from tally.money import allocate, format_cents, parse_amount, split_evenly
from tally.text import format_row, slugify, truncate

__all__ = [
    "Invoice",
    "LineItem",
    "allocate",
    "business_days",
    "due_date",
    "format_cents",
    "format_row",
    "parse_amount",
    "parse_date",
    "parse_terms",
    "read_items",
    "slugify",
    "split_evenly",
    "truncate",
]

__version__ = "0.4.1"
