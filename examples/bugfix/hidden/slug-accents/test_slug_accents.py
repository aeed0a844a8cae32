"""Hidden tests for slug-accents: accented letters keep their base letter."""

import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.getcwd(), "src"))  # run from the repository root

from tally.text import slugify  # noqa: E402

CASES = {
    "Crème Brûlée Ltd": "creme-brulee-ltd",
    "Café Noir SARL": "cafe-noir-sarl",
    "ÉCOLE NORMALE": "ecole-normale",
    "Zürich AG": "zurich-ag",
    "Ångström Optics": "angstrom-optics",
    "naïve façade": "naive-facade",
    "São Paulo / Brasil": "sao-paulo-brasil",
    "Straße 5": "strasse-5",
    "ACME Corp. (EU)": "acme-corp-eu",
    "  --Ünïcödé--  ": "unicode",
}


class SlugAccentsTest(unittest.TestCase):
    def test_accents_fold_to_ascii(self):
        for text, slug in CASES.items():
            with self.subTest(text=text):
                self.assertEqual(slugify(text), slug)

    def test_separator(self):
        self.assertEqual(slugify("Crème Brûlée", separator="_"), "creme_brulee")
        self.assertEqual(slugify("Zürich, Genève", separator="."), "zurich.geneve")

    def test_result_is_plain_ascii(self):
        for text in CASES:
            with self.subTest(text=text):
                slug = slugify(text)
                self.assertTrue(slug.isascii())
                self.assertEqual(slug, slug.lower())


if __name__ == "__main__":
    unittest.main()
