import unittest

from tally.text import format_row, initials, slugify, truncate


class SlugifyTest(unittest.TestCase):
    def test_ascii(self):
        self.assertEqual(slugify("ACME Corp. (EU)"), "acme-corp-eu")
        self.assertEqual(slugify("  Invoice #42 / March  "), "invoice-42-march")
        self.assertEqual(slugify("Q3 report", separator="_"), "q3_report")

    def test_nothing_left(self):
        self.assertEqual(slugify("!!!"), "")


class TruncateTest(unittest.TestCase):
    def test_short_text_unchanged(self):
        self.assertEqual(truncate("Paid", 10), "Paid")
        self.assertEqual(truncate("exactly10!", 10), "exactly10!")

    def test_negative_width(self):
        with self.assertRaises(ValueError):
            truncate("abc", -1)


class FormatRowTest(unittest.TestCase):
    def test_row(self):
        self.assertEqual(format_row(["A-1", "Bolt", "3"], [5, 6, 2]), "A-1    Bolt    3")

    def test_mismatch(self):
        with self.assertRaises(ValueError):
            format_row(["a"], [1, 2])


class InitialsTest(unittest.TestCase):
    def test_initials(self):
        self.assertEqual(initials("ada  lovelace"), "AL")


if __name__ == "__main__":
    unittest.main()
