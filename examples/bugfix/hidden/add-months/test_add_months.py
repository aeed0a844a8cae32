"""Hidden tests for add-months: calendar months, clamped to the end of shorter months."""

import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.getcwd(), "src"))  # run from the repository root

from datetime import date  # noqa: E402

from tally.dates import add_months  # noqa: E402

CASES = [
    (date(2024, 1, 15), 1, date(2024, 2, 15)),
    (date(2024, 1, 31), 1, date(2024, 2, 29)),
    (date(2023, 1, 31), 1, date(2023, 2, 28)),
    (date(2024, 1, 31), 3, date(2024, 4, 30)),
    (date(2024, 1, 31), 11, date(2024, 12, 31)),
    (date(2024, 12, 15), 1, date(2025, 1, 15)),
    (date(2024, 11, 30), 2, date(2025, 1, 30)),
    (date(2024, 2, 29), 12, date(2025, 2, 28)),
    (date(2024, 2, 29), 48, date(2028, 2, 29)),
    (date(2024, 5, 31), 12, date(2025, 5, 31)),
    (date(2000, 1, 1), 1200, date(2100, 1, 1)),
    (date(2024, 3, 31), -1, date(2024, 2, 29)),
    (date(2024, 1, 15), -1, date(2023, 12, 15)),
    (date(2024, 1, 10), -25, date(2021, 12, 10)),
    (date(2024, 7, 31), -12, date(2023, 7, 31)),
    (date(2024, 6, 30), 0, date(2024, 6, 30)),
]


class AddMonthsTest(unittest.TestCase):
    def test_cases(self):
        for start, months, expected in CASES:
            with self.subTest(start=start, months=months):
                self.assertEqual(add_months(start, months), expected)

    def test_every_day_of_a_year_lands_in_the_right_month(self):
        day = date(2023, 1, 1)
        while day.year == 2023:
            for months in (-13, -1, 1, 2, 13):
                with self.subTest(day=day, months=months):
                    moved = add_months(day, months)
                    year, month0 = divmod(day.year * 12 + day.month - 1 + months, 12)
                    self.assertEqual((moved.year, moved.month), (year, month0 + 1))
                    self.assertEqual(moved.day, min(day.day, _last_day(moved.year, moved.month)))
            day = date.fromordinal(day.toordinal() + 1)


def _last_day(year, month):
    following = date(year + month // 12, month % 12 + 1, 1)
    return date.fromordinal(following.toordinal() - 1).day


if __name__ == "__main__":
    unittest.main()
