import unittest
from datetime import date

from tally.dates import business_days, due_date, is_overdue, parse_date, parse_terms


class ParseTest(unittest.TestCase):
    def test_parse_date(self):
        self.assertEqual(parse_date("2024-03-05"), date(2024, 3, 5))
        self.assertEqual(parse_date("05.03.2024"), date(2024, 3, 5))
        self.assertEqual(parse_date(" 5/3/2024 "), date(2024, 3, 5))
        with self.assertRaises(ValueError):
            parse_date("31.02.2024")

    def test_parse_terms(self):
        self.assertEqual(parse_terms("Net 30"), 30)
        self.assertEqual(parse_terms("net45"), 45)
        self.assertEqual(parse_terms("NET 10 days"), 10)
        self.assertEqual(parse_terms("Due on receipt"), 0)
        with self.assertRaises(ValueError):
            parse_terms("whenever")


class DueTest(unittest.TestCase):
    def test_due_date(self):
        self.assertEqual(due_date(date(2024, 1, 15), "Net 30"), date(2024, 2, 14))

    def test_overdue(self):
        issued = date(2024, 1, 15)
        self.assertFalse(is_overdue(issued, "Net 30", date(2024, 2, 14)))
        self.assertTrue(is_overdue(issued, "Net 30", date(2024, 2, 15)))

    def test_business_days(self):
        monday = date(2024, 6, 3)
        self.assertEqual(business_days(monday, monday), 1)
        self.assertEqual(business_days(monday, date(2024, 6, 9)), 5)
        self.assertEqual(business_days(monday, date(2024, 6, 17)), 11)
        self.assertEqual(business_days(date(2024, 6, 8), date(2024, 6, 9)), 0)
        self.assertEqual(business_days(monday, date(2024, 6, 1)), 0)


if __name__ == "__main__":
    unittest.main()
