"""Hidden tests for invoice-shared-lines: invoices never share their lines."""

import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.getcwd(), "src"))  # run from the repository root

from tally.invoice import Invoice, LineItem  # noqa: E402

BOLT = LineItem("A-100", "Hex bolt M6", 10, 15)
HINGE = LineItem("C-1", "Hinge", 2, 400)


class SharedLinesTest(unittest.TestCase):
    def test_add_does_not_leak(self):
        first, second = Invoice("2024-101"), Invoice("2024-102")
        first.add(BOLT)
        self.assertEqual(first.lines, [BOLT])
        self.assertEqual(second.lines, [])
        self.assertEqual(Invoice("2024-103").lines, [])

    def test_add_all_does_not_leak(self):
        first = Invoice("2024-104")
        first.add_all([BOLT, HINGE])
        second = Invoice("2024-105")
        self.assertEqual(second.lines, [])
        self.assertEqual(second.total_cents(), 0)
        second.add_all([HINGE])
        self.assertEqual(first.lines, [BOLT, HINGE])
        self.assertEqual(second.lines, [HINGE])

    def test_many_invoices_in_a_loop(self):
        invoices = [Invoice(f"batch-{n}") for n in range(5)]
        for n, invoice in enumerate(invoices):
            for _ in range(n):
                invoice.add(HINGE)
        self.assertEqual([len(invoice.lines) for invoice in invoices], [0, 1, 2, 3, 4])
        self.assertEqual([i.subtotal_cents() for i in invoices], [0, 800, 1600, 2400, 3200])

    def test_remove_after_other_invoices(self):
        Invoice("2024-106").add(BOLT)
        invoice = Invoice("2024-107")
        invoice.add(HINGE)
        invoice.remove("C-1")
        self.assertEqual(invoice.lines, [])
        with self.assertRaises(KeyError):
            invoice.remove("A-100")

    def test_given_lines_still_work(self):
        invoice = Invoice("2024-108", [BOLT], tax_percent="20")
        invoice.add(HINGE)
        self.assertEqual(invoice.lines, [BOLT, HINGE])
        self.assertEqual(invoice.total_cents(), 1140)
        self.assertEqual(Invoice("2024-109", tax_percent="5").lines, [])


if __name__ == "__main__":
    unittest.main()
