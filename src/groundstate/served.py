"""Which model served an attempt: ``infrastructure_status.models_served`` in its record.

An answer names the model it came from (its ``model`` field). The record names only the model
asked for, so each served name is kept, with ``differs`` when it is another model (a router's
fallback, another family). A name that is the model asked for under another spelling is not
one that differs, and the record says which spelling it was:

- a dated snapshot of the alias (``gpt-4o`` served as ``gpt-4o-2024-08-06``): ``snapshot``;
- a numbered revision of it (``gemini-1.5-pro`` as ``gemini-1.5-pro-002``): ``revision``;
- the model's maker's prefix, on one name only (``openai/gpt-4o-2024-08-06`` for ``gpt-4o``,
  OpenRouter's ``anthropic/claude-3.5-sonnet`` for ``claude-3-5-sonnet``): ``prefix``.

Names are compared without case, a dot between digits read as a dash (``3.5``, ``3-5``). A
prefix of another maker (``anthropic/gpt-4o``) or of a host (``azure/gpt-4o``) still differs.
The name is the provider's word, not verified.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from datetime import datetime
from types import MappingProxyType
from typing import Any

from groundstate.trace import ModelCallEvent, TraceEvent


def models_served(events: Iterable[TraceEvent]) -> dict[str, Any]:
    """``models_served``: each model the answers said they came from, by the model requested,
    with how many answers said so and whether it ``differs``. Empty when no answer named its
    model."""
    answers: dict[tuple[str, str], int] = {}
    for event in events:
        if isinstance(event, ModelCallEvent) and event.served_model is not None:
            pair = (event.model, event.served_model)
            answers[pair] = answers.get(pair, 0) + 1
    if not answers:
        return {}
    served = [_served(asked, named, count) for (asked, named), count in answers.items()]
    return {"models_served": served}


def _served(asked: str, named: str, count: int) -> dict[str, Any]:
    """One entry of ``models_served``."""
    entry: dict[str, Any] = {"requested": asked, "served": named, "answers": count}
    spelling = same_model(asked, named)
    return entry | {"differs": spelling is None} | (spelling or {})


def same_model(asked: str, named: str) -> dict[str, str] | None:
    """How *named* spells the model *asked* for (``{}``: the same name; else its ``snapshot``,
    ``revision`` and ``prefix``), or None when it names another model."""
    if named == asked:
        return {}
    asked_prefix, asked_bare = maker_prefix(asked)
    named_prefix, named_bare = maker_prefix(named)
    alias, served = _key(asked_bare), _key(named_bare)
    spelling: dict[str, str] = {}
    if served != alias:
        date = snapshot_date(alias, served)
        number = numbered_revision(alias, served)
        if date is None and number is None:
            return None
        spelling = {"snapshot": date} if date else {"revision": str(number)}
    if asked_prefix != named_prefix:
        spelling["prefix"] = asked_prefix or named_prefix
    return spelling


MAKERS: Mapping[str, str] = MappingProxyType(
    {
        "openai": r"gpt|chatgpt|codex|o\d",
        "anthropic": "claude",
        "google": "gemini|gemma|learnlm",
        "meta-llama": "(?:meta-)?llama",
        "meta": "(?:meta-)?llama",
        "mistralai": "(?:open-)?(?:mistral|mixtral|codestral|ministral|pixtral|magistral|devstral)",
        "deepseek": "deepseek",
        "deepseek-ai": "deepseek",
        "qwen": "qwen|qwq|qvq",
        "x-ai": "grok",
        "xai": "grok",
        "cohere": "command|c4ai|aya",
        "microsoft": "phi",
        "moonshotai": "kimi|moonshot",
        "z-ai": "glm",
        "zai-org": "glm",
        "amazon": "nova",
    }
)
"""A maker's prefix (as OpenRouter, LiteLLM and Hugging Face write it, without case) and the
names its models begin with: ``openai/`` prefixes ``gpt-...`` and ``o1``, not ``claude-...``."""

_MADE_BY = {
    maker: re.compile(rf"(?:{names})(?![a-z])", re.IGNORECASE) for maker, names in MAKERS.items()
}


def maker_prefix(name: str) -> tuple[str, str]:
    """(``maker/``, the rest) when *name* begins with the prefix of the maker of the model the
    rest names, else ("", *name*): ``openai/gpt-4o`` is ``gpt-4o`` made by OpenAI;
    ``anthropic/gpt-4o`` and ``azure/gpt-4o`` keep their prefix, naming no maker of it."""
    maker, slash, rest = name.partition("/")
    made = _MADE_BY.get(maker.casefold())
    if not slash or made is None or made.match(rest) is None:
        return "", name
    return f"{maker}/", rest


def _key(name: str) -> str:
    """*name* as it is compared: without case, a dot between digits read as a dash (OpenRouter
    writes ``claude-3.5-sonnet`` for Anthropic's ``claude-3-5-sonnet``)."""
    return re.sub(r"(?<=\d)\.(?=\d)", "-", name.casefold())


SNAPSHOT = re.compile(r"[-@](\d{4})(-?)(\d{2})\2(\d{2})|-(\d{2})(\d{2})")
"""A snapshot's date after its alias: ``-2024-08-06`` (OpenAI's), ``-20250929``
(Anthropic's), ``@20250929`` (Vertex AI's), ``-0613`` (OpenAI's older, month and day)."""

REVISION = re.compile(r"[-@](0\d\d)")
"""A numbered revision after its alias: Google's ``-001``, ``-002`` (``@001`` on Vertex AI).
Three digits with a leading zero: ``-405`` (a size) or ``-2407`` (a date) are none."""


def snapshot_date(alias: str, named: str) -> str | None:
    """The date (``2024-08-06``, ``06-13``) when *named* is *alias* followed by a snapshot's
    date and nothing else, else None: ``gpt-4o-mini-2024-07-18`` is no snapshot of ``gpt-4o``.
    An alias ending ``-latest`` (``claude-3-5-sonnet-latest``) stands for its dated snapshot."""
    found = _after_alias(alias, named, SNAPSHOT)
    if found is None or not _a_date(found):
        return None
    year, _, month, day, short_month, short_day = found.groups()
    return f"{year}-{month}-{day}" if year else f"{short_month}-{short_day}"


def numbered_revision(alias: str, named: str) -> str | None:
    """The number (``002``) when *named* is *alias* followed by a numbered revision and
    nothing else (``gemini-1.5-pro-002``), else None (an alias ending ``-latest`` as above)."""
    found = _after_alias(alias, named, REVISION)
    return found.group(1) if found is not None else None


def _after_alias(alias: str, named: str, suffix: re.Pattern[str]) -> re.Match[str] | None:
    """*suffix* matched whole after *alias* (or its stem before ``-latest``) in *named*."""
    for stem in {alias, alias.removesuffix("-latest")}:
        if stem and named.startswith(stem):
            found = suffix.fullmatch(named, len(stem))
            if found is not None:
                return found
    return None


def _a_date(found: re.Match[str]) -> bool:
    """Whether a :data:`SNAPSHOT` match is a calendar date (a leap year's 29 February too)."""
    year, _, month, day, short_month, short_day = found.groups()
    try:
        datetime(int(year or 2000), int(month or short_month), int(day or short_day))
    except ValueError:
        return False
    return True
