import unittest

from tally.invoice import Invoice, LineItem

BOLT = LineItem("A-100", "Hex bolt M6", 10, 15)
HINGE = LineItem("C-1", "Hinge", 2, 400)


class InvoiceTest(unittest.TestCase):
    def test_totals(self):
        invoice = Invoice("2024-001", [BOLT, HINGE], tax_percent="20")
        self.assertEqual(invoice.subtotal_cents(), 950)
        self.assertEqual(invoice.tax_cents(), 190)
        self.assertEqual(invoice.total_cents(), 1140)

    def test_discount_before_tax(self):
        invoice = Invoice("2024-002", [HINGE], tax_percent="10")
        invoice.apply_discount("12.5")
        self.assertEqual(invoice.discount_cents(), 100)
        self.assertEqual(invoice.tax_cents(), 70)
        self.assertEqual(invoice.total_cents(), 770)
        with self.assertRaises(ValueError):
            invoice.apply_discount("120")

    def test_add_and_remove(self):
        invoice = Invoice("2024-003", [BOLT])
        invoice.add(HINGE)
        invoice.remove("A-100")
        self.assertEqual(invoice.lines, [HINGE])
        with self.assertRaises(KeyError):
            invoice.remove("nope")


if __name__ == "__main__":
    unittest.main()
