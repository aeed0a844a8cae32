"""Diagnosis: failure taxonomies, sampled failures, labels from several annotators, their
agreement, the adjudicated set, and grader-versus-grader agreement (see docs/diagnosis.md)."""

from groundstate.diagnosis.labels import (
    LabelFileError,
    LabelRow,
    adjudicated_defects,
    against_adjudication,
    import_labels,
    label_agreement,
    label_records,
    read_label_file,
    sheet_taxonomy,
)
from groundstate.diagnosis.sampling import (
    SheetRow,
    failed_runs,
    sample_failures,
    sheet_rows,
    write_sheet,
)
from groundstate.diagnosis.taxonomy import (
    EVALUATOR_DEFECT,
    TAXONOMY_FILE,
    FailureLabel,
    FailureTaxonomy,
    default_taxonomy,
    load_taxonomy,
    suite_taxonomy,
)
from groundstate.diagnosis.verdicts import VerdictAgreement, regrade, verdict_agreement

__all__ = [
    "EVALUATOR_DEFECT",
    "TAXONOMY_FILE",
    "FailureLabel",
    "FailureTaxonomy",
    "LabelFileError",
    "LabelRow",
    "SheetRow",
    "VerdictAgreement",
    "adjudicated_defects",
    "against_adjudication",
    "default_taxonomy",
    "failed_runs",
    "import_labels",
    "label_agreement",
    "label_records",
    "load_taxonomy",
    "read_label_file",
    "regrade",
    "sample_failures",
    "sheet_rows",
    "sheet_taxonomy",
    "suite_taxonomy",
    "verdict_agreement",
    "write_sheet",
]
