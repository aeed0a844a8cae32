import sys
import unittest

sys.path.insert(0, "src")
from calc import add


class Visible(unittest.TestCase):
    def test_zero(self) -> None:
        self.assertEqual(add(0, 0), 0)
