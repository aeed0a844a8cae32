"""Hidden tests for half-cent-rounding: half a cent rounds away from zero, exactly."""

import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.getcwd(), "src"))  # run from the repository root

from tally.money import parse_amount  # noqa: E402

CASES = {
    "0.125": 13,
    "0.135": 14,
    "0.145": 15,
    "1.005": 101,
    "2.675": 268,
    "19.995": 2000,
    "0.124": 12,
    "0.1249": 12,
    "0.0050": 1,
    "0.0049": 0,
    "-0.125": -13,
    "-1.005": -101,
    "-$2.345": -235,
    "$1,000.005": 100001,
    "1234567.895": 123456790,
    "12.50": 1250,
    "7": 700,
    "-3": -300,
}


class HalfCentTest(unittest.TestCase):
    def test_rounds_half_away_from_zero(self):
        for text, cents in CASES.items():
            with self.subTest(text=text):
                self.assertEqual(parse_amount(text), cents)

    def test_result_is_an_int(self):
        for text in CASES:
            with self.subTest(text=text):
                self.assertIs(type(parse_amount(text)), int)

    def test_still_rejects_garbage(self):
        for text in ("", "abc", "1.2.3", "$", "--1", "12 50"):
            with self.subTest(text=text), self.assertRaises(ValueError):
                parse_amount(text)


if __name__ == "__main__":
    unittest.main()
