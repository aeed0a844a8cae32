"""Deep copies of one value for code groundstate does not control (Python checks, judges).

User code gets a copy of its own of what it may read (the trace, the attempt's diff): what it
edits in its copy reaches neither the record nor the next check.
"""

from __future__ import annotations

import copy
import pickle
from typing import Generic, TypeVar

T = TypeVar("T")


class Copies(Generic[T]):
    """Fresh deep copies of *value*, one per call of :meth:`fresh`.

    The value is pickled once, on the first copy, and each copy is unpickled from that image:
    several times cheaper than ``copy.deepcopy`` (or pydantic's ``model_copy(deep=True)``),
    and no copy is ever the value itself. A value that cannot be pickled (an exotic tool
    output) is deep-copied instead. The value must not change after the first copy.

    Safe to call from several threads: two first calls at once each pickle the same value.
    """

    def __init__(self, value: T) -> None:
        self._value = value
        self._image: bytes | None = None
        self._picklable = True

    def fresh(self) -> T:
        """A new deep copy of the value."""
        if self._image is None and self._picklable:
            try:
                self._image = pickle.dumps(self._value, protocol=pickle.HIGHEST_PROTOCOL)
            except Exception:  # a part pickle refuses: copy it the slow way from now on
                self._picklable = False
        if self._image is None:
            return copy.deepcopy(self._value)
        copied: T = pickle.loads(self._image)
        return copied
