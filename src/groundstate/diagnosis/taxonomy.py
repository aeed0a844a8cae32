"""Failure taxonomies: a versioned, fixed list of labels annotators may give a failed run.

A suite declares its taxonomy in ``taxonomy.yaml`` beside ``suite.yaml`` (a separate file, so
the suite format is unchanged); without one, the default from the reference chapter applies
(:func:`default_taxonomy`). Labels stored in the run store name the taxonomy they were given
under (``name@version``), so labels given under different versions are never pooled.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

import yaml
from pydantic import Field, StrictInt, field_validator

from groundstate.spec.files import load_model
from groundstate.spec.strict import Strict

TAXONOMY_FILE = "taxonomy.yaml"
"""The file in a suite folder that declares its failure taxonomy."""
EVALUATOR_DEFECT = "evaluator_defect"
"""The label for failures the grader caused; every taxonomy declares it, and adjudicated
defects become regression cases."""


class FailureLabel(Strict):
    """One label of a taxonomy."""

    id: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    """Lower-case identifier used in labelling sheets (e.g. ``invalid_arguments``)."""
    description: str
    """What counts as this failure: shown to annotators on the labelling page."""

    @field_validator("description")
    @classmethod
    def _said(cls, description: str) -> str:
        if not description.strip():
            raise ValueError("say what counts as this failure: annotators are shown it")
        return description


class FailureTaxonomy(Strict):
    """A named, versioned, fixed set of failure labels."""

    name: str
    """Stored with its version as ``name@version``: so no ``@``, no surrounding spaces."""
    version: StrictInt = Field(ge=1)
    """Bump it whenever a label is added, removed or redefined (an integer: ``true`` or
    ``"2"`` is a mistake, not a version)."""
    labels: list[FailureLabel] = Field(min_length=1)

    @field_validator("name")
    @classmethod
    def _plain_name(cls, name: str) -> str:
        if not name.strip() or name != name.strip() or "@" in name or not name.isprintable():
            raise ValueError(
                "a name without '@', line breaks or surrounding spaces (labels store it as "
                "name@version)"
            )
        return name

    @field_validator("labels")
    @classmethod
    def _unique_with_defect(cls, labels: list[FailureLabel]) -> list[FailureLabel]:
        ids = [label.id for label in labels]
        duplicates = sorted({i for i in ids if ids.count(i) > 1})
        if duplicates:
            raise ValueError(f"label ids repeat: {', '.join(duplicates)}")
        if EVALUATOR_DEFECT not in ids:
            raise ValueError(
                f"a taxonomy must declare {EVALUATOR_DEFECT!r}: confirmed grader defects "
                "become regression cases"
            )
        return labels

    @property
    def ref(self) -> str:
        """``name@version``, stored with every label given under this taxonomy."""
        return f"{self.name}@{self.version}"

    @property
    def ids(self) -> list[str]:
        return [label.id for label in self.labels]


def default_taxonomy() -> FailureTaxonomy:
    """The taxonomy groundstate ships (perception ... recovery, plus evaluator_defect)."""
    text = files("groundstate.diagnosis").joinpath("default_taxonomy.yaml").read_text("utf-8")
    return FailureTaxonomy.model_validate(yaml.safe_load(text))


def load_taxonomy(path: Path) -> FailureTaxonomy:
    """A taxonomy file; malformed ones are a SpecError naming the file and field."""
    return load_model(Path(path), FailureTaxonomy)


def suite_taxonomy(suite_root: Path) -> FailureTaxonomy:
    """The suite's ``taxonomy.yaml`` if it has one, else the default taxonomy."""
    declared = Path(suite_root) / TAXONOMY_FILE
    return load_taxonomy(declared) if declared.is_file() else default_taxonomy()
