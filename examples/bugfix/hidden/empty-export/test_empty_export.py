"""Hidden tests for empty-export: empty exports and blank lines are not errors."""

import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.getcwd(), "src"))  # run from the repository root

from tally.csvio import read_items  # noqa: E402
from tally.invoice import LineItem  # noqa: E402

HEADER = "sku,description,quantity,unit_price"
BOLT = LineItem("A-100", "Hex bolt M6", 10, 15)
HINGE = LineItem("C-1", "Hinge", 2, 400)
ROWS = "A-100,Hex bolt M6,10,0.15\nC-1,Hinge,2,4.00\n"


class EmptyExportTest(unittest.TestCase):
    def test_no_data_at_all(self):
        for text in ("", "\n", "\n\n", "   \n", "\r\n", " \t "):
            with self.subTest(text=text):
                self.assertEqual(read_items(text), [])

    def test_header_only(self):
        for text in (HEADER, HEADER + "\n", HEADER + "\n\n  \n", HEADER + "\r\n\r\n"):
            with self.subTest(text=text):
                self.assertEqual(read_items(text), [])

    def test_blank_lines_are_skipped(self):
        for text in (
            HEADER + "\n" + ROWS + "\n\n",
            HEADER + "\n" + ROWS + "   \n",
            HEADER + "\nA-100,Hex bolt M6,10,0.15\n\nC-1,Hinge,2,4.00\n",
            "\n" + HEADER + "\n" + ROWS,
            (HEADER + "\n" + ROWS + "\n").replace("\n", "\r\n"),
        ):
            with self.subTest(text=text):
                self.assertEqual(read_items(text), [BOLT, HINGE])

    def test_semicolon_export_with_trailing_blank_line(self):
        text = "sku;description;quantity;unit_price\nA-100;Hex bolt M6;10;0.15\n\n"
        self.assertEqual(read_items(text, delimiter=";"), [BOLT])

    def test_short_rows_are_still_errors_with_their_line_number(self):
        with self.assertRaisesRegex(ValueError, "line 4"):
            read_items(HEADER + "\nA-100,Hex bolt M6,10,0.15\n\nC-1,Hinge\n")
        with self.assertRaisesRegex(ValueError, "line 3"):
            read_items("\n" + HEADER + "\nC-1,Hinge,2\n")

    def test_missing_columns_are_still_errors(self):
        with self.assertRaisesRegex(ValueError, "missing column"):
            read_items("sku,description\n\n")


if __name__ == "__main__":
    unittest.main()
