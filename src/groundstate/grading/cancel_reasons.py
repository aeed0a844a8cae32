"""How a person says each reason a retail cancellation takes, in any words.

Shared by the τ² retail checks (:mod:`groundstate.tau2.retail_checks`) and the example retail
suite's ``checks.py``, so both read "since you won't need it" or "you ordered the wrong one"
the same way. The patterns match text already put through
:func:`groundstate.grading.constraints.normalise`; read them with
:func:`groundstate.grading.constraints.affirms`, which skips negated phrasings.
"""

from __future__ import annotations

import re

REASON_WORDS = {
    "no longer needed": re.compile(
        r"\bno longer (need|want|require|necessary)|\b(do not|don't|dont|won't|will not) "
        r"(need|want)|\bnot (needed|necessary|required)\b|\b(unneeded|unnecessary)\b"
        r"|\bno (need|use) for\b"
        r"|\b(need|want) (it|them|this|these) (any ?more|no more)"
    ),
    "ordered by mistake": re.compile(
        r"\bmistake|\bby accident|\baccidental|\bin error\b"
        r"|\b(ordered|bought|purchased) (it |them |this |that )?(wrongly|the wrong)\b"
    ),
}
"""Each cancellation reason, as the τ² retail tools spell it, to the words that state it."""
