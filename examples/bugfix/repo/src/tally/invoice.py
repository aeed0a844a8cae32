"""An invoice: line items, a percentage discount and tax, all in integer cents."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal


@dataclass(frozen=True)
class LineItem:
    sku: str
    description: str
    quantity: int
    unit_price_cents: int

    @property
    def total_cents(self) -> int:
        return self.quantity * self.unit_price_cents


def _percent_of(cents: int, percent: Decimal) -> int:
    """``percent`` % of ``cents``, rounded half up to a whole cent."""
    exact = Decimal(cents) * percent / 100
    return int(exact.quantize(Decimal(1), rounding=ROUND_HALF_UP))


class Invoice:
    """A mutable invoice; totals are computed from the current lines on every call."""

    def __init__(
        self, number: str, lines: list[LineItem] = [], tax_percent: str | Decimal = "0"
    ) -> None:
        self.number = number
        self.lines = lines
        self.tax_percent = Decimal(tax_percent)
        self.discount_percent = Decimal(0)

    def add(self, item: LineItem) -> None:
        self.lines.append(item)

    def add_all(self, items: Iterable[LineItem]) -> None:
        self.lines.extend(items)

    def remove(self, sku: str) -> None:
        """Drop every line with this SKU; unknown SKUs are an error."""
        kept = [line for line in self.lines if line.sku != sku]
        if len(kept) == len(self.lines):
            raise KeyError(sku)
        self.lines[:] = kept

    def apply_discount(self, percent: str | Decimal) -> None:
        """Discount the subtotal by a percentage (replacing any earlier discount)."""
        value = Decimal(percent)
        if not 0 <= value <= 100:
            raise ValueError(f"discount must be between 0 and 100 percent, got {percent}")
        self.discount_percent = value

    def subtotal_cents(self) -> int:
        return sum(line.total_cents for line in self.lines)

    def discount_cents(self) -> int:
        return _percent_of(self.subtotal_cents(), self.discount_percent)

    def tax_cents(self) -> int:
        """Tax on the discounted subtotal."""
        return _percent_of(self.subtotal_cents() - self.discount_cents(), self.tax_percent)

    def total_cents(self) -> int:
        return self.subtotal_cents() - self.discount_cents() + self.tax_cents()
