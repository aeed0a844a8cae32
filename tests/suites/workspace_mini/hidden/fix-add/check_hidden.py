import sys
import unittest

sys.path.insert(0, "src")
from calc import add


class Hidden(unittest.TestCase):
    def test_adds(self) -> None:
        self.assertEqual(add(2, 3), 5)
        self.assertEqual(add(-1, 1), 0)
