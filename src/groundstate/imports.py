"""Results from elsewhere: kept for its old import path; see :mod:`groundstate.importers`."""

from groundstate.importers import (
    TERMINAL_PREFIXES,
    ImportedRow,
    ImportOptions,
    ImportReport,
    import_file,
    import_results,
    read_rows,
)

__all__ = [
    "TERMINAL_PREFIXES",
    "ImportOptions",
    "ImportReport",
    "ImportedRow",
    "import_file",
    "import_results",
    "read_rows",
]
