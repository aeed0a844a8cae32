"""Hidden tests for truncate-width: a cut text is never longer than the width."""

import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.getcwd(), "src"))  # run from the repository root

from tally.text import format_row, truncate  # noqa: E402

TEXT = "Quarterly report for the board"


class TruncateWidthTest(unittest.TestCase):
    def test_issue_example(self):
        self.assertEqual(truncate(TEXT, 10), "Quarterly…")

    def test_never_longer_than_width(self):
        for ellipsis in ("…", "...", "", " [more]"):
            for width in range(0, len(TEXT) + 3):
                with self.subTest(ellipsis=ellipsis, width=width):
                    self.assertLessEqual(len(truncate(TEXT, width, ellipsis)), width)

    def test_cut_keeps_the_start_and_ends_with_the_ellipsis(self):
        for ellipsis in ("…", "...", "", "~"):
            for width in range(len(ellipsis), len(TEXT)):
                with self.subTest(ellipsis=ellipsis, width=width):
                    keep = width - len(ellipsis)
                    self.assertEqual(truncate(TEXT, width, ellipsis), TEXT[:keep] + ellipsis)

    def test_other_inputs(self):
        self.assertEqual(truncate("abcdef", 5, "..."), "ab...")
        self.assertEqual(truncate("abcdef", 3, ""), "abc")
        self.assertEqual(truncate("Invoice 2024-117", 8), "Invoice…")
        self.assertEqual(truncate("ab", 1), "…")

    def test_text_that_fits_is_unchanged(self):
        for width in range(len(TEXT), len(TEXT) + 3):
            self.assertEqual(truncate(TEXT, width, "..."), TEXT)
        self.assertEqual(truncate("", 0), "")

    def test_format_row_columns_line_up(self):
        row = format_row(["Quarterly report", "Acme Holdings GmbH", "12"], [10, 8, 3])
        self.assertEqual(row, "Quarterly…  Acme Ho…  12")


if __name__ == "__main__":
    unittest.main()
