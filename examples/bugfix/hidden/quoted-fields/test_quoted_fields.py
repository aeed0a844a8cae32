"""Hidden tests for quoted-fields: quoted cells may contain the delimiter and quotes."""

import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.getcwd(), "src"))  # run from the repository root

from tally.csvio import read_items  # noqa: E402
from tally.invoice import LineItem  # noqa: E402

HEADER = "sku,description,quantity,unit_price\n"


class QuotedFieldsTest(unittest.TestCase):
    def test_delimiter_inside_quotes(self):
        text = HEADER + 'A-7,"Bolt, M6, zinc",10,0.15\nB-2,Washer,5,0.02\n'
        self.assertEqual(
            read_items(text),
            [LineItem("A-7", "Bolt, M6, zinc", 10, 15), LineItem("B-2", "Washer", 5, 2)],
        )

    def test_quoted_amount_with_thousands_separator(self):
        text = HEADER + 'L-1,Lathe,1,"$1,299.00"\nL-2,"Drill, cordless",2,"1,049.50"\n'
        self.assertEqual(
            read_items(text),
            [LineItem("L-1", "Lathe", 1, 129900), LineItem("L-2", "Drill, cordless", 2, 104950)],
        )

    def test_doubled_quote_is_a_quote(self):
        text = HEADER + 'P-1,"Pipe 1/2"" x 2m, copper",4,3.10\n'
        self.assertEqual(read_items(text), [LineItem("P-1", 'Pipe 1/2" x 2m, copper', 4, 310)])

    def test_every_cell_may_be_quoted(self):
        text = '"sku","description","quantity","unit_price"\n"A-1","Nut","3","0.05"\n'
        self.assertEqual(read_items(text), [LineItem("A-1", "Nut", 3, 5)])

    def test_empty_quoted_cell(self):
        self.assertEqual(read_items(HEADER + 'Z-9,"",1,1.00\n'), [LineItem("Z-9", "", 1, 100)])

    def test_other_delimiter_inside_quotes(self):
        text = 'sku;description;quantity;unit_price\nN-1;"Nut; M6";3;0.05\nN-2;Nut, M8;1;0.07\n'
        self.assertEqual(
            read_items(text, delimiter=";"),
            [LineItem("N-1", "Nut; M6", 3, 5), LineItem("N-2", "Nut, M8", 1, 7)],
        )

    def test_unquoted_cells_are_still_trimmed(self):
        text = HEADER + ' A-100 , Hex bolt M6 ,10, 0.15 \n'
        self.assertEqual(read_items(text), [LineItem("A-100", "Hex bolt M6", 10, 15)])

    def test_short_rows_are_still_errors(self):
        with self.assertRaisesRegex(ValueError, "line 2"):
            read_items(HEADER + '"A-1, spare",3\n')


if __name__ == "__main__":
    unittest.main()
