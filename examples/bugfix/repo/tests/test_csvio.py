import unittest

from tally.csvio import read_items
from tally.invoice import LineItem

EXPORT = """sku,description,quantity,unit_price
A-100,Hex bolt M6,10,0.15
B-200, Washer ,100,$0.02
"""


class ReadItemsTest(unittest.TestCase):
    def test_reads_rows(self):
        self.assertEqual(
            read_items(EXPORT),
            [LineItem("A-100", "Hex bolt M6", 10, 15), LineItem("B-200", "Washer", 100, 2)],
        )

    def test_column_order_and_case(self):
        text = "Quantity,SKU,Unit_Price,Description,Notes\n2,C-1,4.00,Hinge,rush\n"
        self.assertEqual(read_items(text), [LineItem("C-1", "Hinge", 2, 400)])

    def test_semicolon_delimiter(self):
        text = "sku;description;quantity;unit_price\nA-1;Nut;3;0.05\n"
        self.assertEqual(read_items(text, delimiter=";"), [LineItem("A-1", "Nut", 3, 5)])

    def test_missing_column(self):
        with self.assertRaisesRegex(ValueError, "line 1: missing column.*unit_price"):
            read_items("sku,description,quantity\nA,B,1\n")

    def test_short_row_names_its_line(self):
        with self.assertRaisesRegex(ValueError, "line 4"):
            read_items(EXPORT + "C-300,Nut\n")

    def test_bad_quantity_names_its_line(self):
        with self.assertRaisesRegex(ValueError, "line 2"):
            read_items("sku,description,quantity,unit_price\nA,B,two,1.00\n")


if __name__ == "__main__":
    unittest.main()
