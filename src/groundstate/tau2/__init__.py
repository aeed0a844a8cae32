"""Import τ²-bench's retail domain as a groundstate suite (``groundstate import-tau2``).

See docs/tau2-audit.md for what the conversion maps, what it leaves out, and the audit of the
converted tasks.
"""

from groundstate.tau2.importer import ImportOptions, ImportReport, import_tau2

__all__ = ["ImportOptions", "ImportReport", "import_tau2"]
