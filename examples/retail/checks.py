"""Python outcome checks of the retail suite, for what a state diff cannot say exactly.

Addresses are compared after normalisation: case, punctuation and spacing, whether the unit
went into ``line2`` or stayed in ``line1``, and the usual postal abbreviations ("Lane" or
"Ln", "Street" or "St.", "Apartment" or "Apt", "West" or "W"). The task requires the right
address, not one way of spelling it or splitting it into fields; every word and number still
has to be there. Each check returns ``(passed, evidence)``.
"""

from __future__ import annotations

import re
from typing import Any

from groundstate.environments.base import StateView, diff_snapshots

Evidence = tuple[bool, dict[str, Any]]

# Only rows with these keys may change (or, with None, any row may be added) per table.
Allowed = dict[str, set[Any] | None]


# USPS abbreviations (Publication 28) for the words these addresses use, and a few more.
_ABBREVIATIONS = {
    "APARTMENT": "APT",
    "AVENUE": "AVE",
    "BOULEVARD": "BLVD",
    "COURT": "CT",
    "DRIVE": "DR",
    "EAST": "E",
    "HIGHWAY": "HWY",
    "LANE": "LN",
    "NORTH": "N",
    "NORTHEAST": "NE",
    "NORTHWEST": "NW",
    "PLACE": "PL",
    "ROAD": "RD",
    "SOUTH": "S",
    "SOUTHEAST": "SE",
    "SOUTHWEST": "SW",
    "STREET": "ST",
    "SUITE": "STE",
    "TERRACE": "TER",
    "WEST": "W",
}


def _norm(*parts: Any) -> str:
    """One canonical spelling: upper case, no punctuation, single spaces, abbreviated words."""
    text = " ".join(str(p) for p in parts if p).upper()
    words = re.sub(r"[.,;]", " ", text).split()
    return " ".join(_ABBREVIATIONS.get(word, word) for word in words)


def _order_address(view: StateView, order_id: str) -> str:
    rows = view.query(
        "SELECT ship_line1, ship_line2, ship_city, ship_state, ship_zip FROM orders"
        " WHERE order_id = ?",
        (order_id,),
    )
    return _norm(*rows[0]) if rows else ""


def _default_address(view: StateView, customer_id: str) -> str:
    rows = view.query(
        "SELECT a.line1, a.line2, a.city, a.state, a.zip_code FROM customers c"
        " JOIN addresses a ON a.address_id = c.default_address_id WHERE c.customer_id = ?",
        (customer_id,),
    )
    return _norm(*rows[0]) if rows else ""


def _only_changed(s0: StateView, sT: StateView, allowed: Allowed) -> Evidence:
    """No table outside *allowed* changed, and inside it only the allowed rows."""
    diff = diff_snapshots(s0.snapshot(), sT.snapshot())
    unexpected: list[str] = []
    for name, table in diff.tables.items():
        if name.startswith("sqlite_"):  # SQLite bookkeeping (e.g. AUTOINCREMENT counters)
            continue
        if name not in allowed:
            unexpected.append(f"table {name} changed")
            continue
        keys = allowed[name]
        if keys is None:
            if table.removed or table.changed:
                unexpected.append(f"rows of {name} removed or changed")
            continue
        if table.added or table.removed:
            unexpected.append(f"rows of {name} added or removed")
        unexpected += [f"{name} row {c.key} changed" for c in table.changed if c.key not in keys]
    return not unexpected, {"unexpected_changes": unexpected}


def _addresses_equal(found: dict[str, str], expected: dict[str, str]) -> Evidence:
    wrong = {k: v for k, v in found.items() if v != expected[k]}
    return not wrong, {"expected": expected, "found": found}


# --- change-order-address -------------------------------------------------------------------

OFFICE = _norm("200 W Adams Street", "Suite 1400", "Chicago", "IL", "60606")


def jacket_order_ships_to_office(s0: StateView, sT: StateView) -> Evidence:
    """O-1009 ships to the office address; no other row changed."""
    ok, evidence = _addresses_equal({"O-1009": _order_address(sT, "O-1009")}, {"O-1009": OFFICE})
    only, extra = _only_changed(s0, sT, {"orders": {"O-1009"}})
    return ok and only, {**evidence, **extra}


# --- move-everything ------------------------------------------------------------------------

EVANSTON = _norm("1520 Judson Avenue", "", "Evanston", "IL", "60201")


def everything_moved_to_evanston(s0: StateView, sT: StateView) -> Evidence:
    """Tomas's default address and both undelivered orders point to Evanston; nothing else."""
    found = {
        "default": _default_address(sT, "C04"),
        "O-1009": _order_address(sT, "O-1009"),
        "O-1011": _order_address(sT, "O-1011"),
    }
    ok, evidence = _addresses_equal(found, dict.fromkeys(found, EVANSTON))
    only, extra = _only_changed(s0, sT, {"addresses": {4}, "orders": {"O-1009", "O-1011"}})
    return ok and only, {**evidence, **extra}


# --- several-changes ------------------------------------------------------------------------

DECATUR = _norm("48 Larch Lane", "Apt 2", "Decatur", "GA", "30030")
ATLANTA = _norm("1189 Mansfield Avenue", "", "Atlanta", "GA", "30307")


def samuel_moved_but_order_did_not(s0: StateView, sT: StateView) -> Evidence:
    """Samuel's default address is the Decatur one; yesterday's order still ships to Atlanta."""
    found = {"default": _default_address(sT, "C08"), "O-1020": _order_address(sT, "O-1020")}
    return _addresses_equal(found, {"default": DECATUR, "O-1020": ATLANTA})


def samuel_nothing_else_changed(s0: StateView, sT: StateView) -> Evidence:
    """Only the two refunds, the three items, and Samuel's address changed."""
    return _only_changed(
        s0,
        sT,
        {
            "refunds": None,
            "order_items": {"I-1019-2", "I-1019-3", "I-1020-2"},
            "addresses": {8},
        },
    )
