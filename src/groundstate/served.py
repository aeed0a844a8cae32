"""Which model served an attempt: ``infrastructure_status.models_served`` in its record.

An answer names the model it came from (its ``model`` field). The record names only the model
asked for, so each served name is kept, with ``differs`` when it is another model (a router's
fallback, another family). A name that is the model asked for under another spelling is not
one that differs, and the record says which spelling it was:

- a dated snapshot of the alias (``gpt-4o`` served as ``gpt-4o-2024-08-06``): ``snapshot``;
- a numbered revision of it (``gemini-1.5-pro`` as ``gemini-1.5-pro-002``): ``revision``;
- the model's maker's prefix, on one name only (``openai/gpt-4o-2024-08-06`` for ``gpt-4o``,
  OpenRouter's ``anthropic/claude-3.5-sonnet`` for ``claude-3-5-sonnet``, Bedrock's
  ``us.anthropic.`` in ``us.anthropic.claude-sonnet-4-5-20250929-v1:0``): ``prefix``;
- a host's or router's prefix, on one name only (LiteLLM's ``azure/gpt-4o``, a router's
  ``openrouter/anthropic/claude-3.5-sonnet``: the route, not the model): ``host``;
- Bedrock's model version (``-v1:0`` after a Bedrock id): ``version``;
- the version written elsewhere among the words (``claude-4.5-sonnet`` for
  ``claude-sonnet-4-5``): ``reordered``.

Names are compared without case, a dot between digits read as a dash (``3.5``, ``3-5``). A
prefix of another maker (``anthropic/gpt-4o``), two hosts (``azure/`` for ``bedrock/``) or two
Bedrock versions, and another model behind a host (``azure/gpt-4o-mini``) still differ. An
Azure deployment's own name (``azure/prod-chat``) names no model to compare: the model the
provider says served it is the one requested (``deployment``), unless it names two. The name
is the provider's word, not verified.
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
    return {"models_served": _one_model_a_deployment(served)}


def served_in_batch(records: Iterable[Any]) -> list[dict[str, Any]]:
    """A batch's ``models_served`` from its tries' lists (*records*, one a try): each served
    name by the model requested, with its answers and the ``tries`` it served in, those that
    differ first. Each is read again by :func:`same_model`, so a try recorded by an older
    reading (round 51's ``differs`` of a maker's prefix) is shown as this one reads it; an
    entry that is not one (an edited record) is passed over."""
    answers: dict[tuple[str, str], list[int]] = {}
    for entries in records:
        for entry in entries if isinstance(entries, list) else ():
            pair = _pair(entry)
            if pair is not None:
                counts = answers.setdefault(pair[:2], [0, 0])
                counts[0] += pair[2]
                counts[1] += 1
    served = [
        _served(asked, named, count) | {"tries": tries}
        for (asked, named), (count, tries) in answers.items()
    ]
    served = _one_model_a_deployment(served)
    return sorted(served, key=lambda e: (not e["differs"], e["requested"], e["served"]))


def _pair(entry: Any) -> tuple[str, str, int] | None:
    """(requested, served, answers) of one recorded entry, or None when it is not one."""
    if not isinstance(entry, dict):
        return None
    asked, named, count = entry.get("requested"), entry.get("served"), entry.get("answers")
    if isinstance(asked, str) and isinstance(named, str) and type(count) is int and count > 0:
        return asked, named, count
    return None


def _served(asked: str, named: str, count: int) -> dict[str, Any]:
    """One entry of ``models_served``. An Azure deployment's name (:func:`deployment`) names
    no model to compare: whatever model the provider says served it is the one requested
    (``"deployment": "prod-chat"``), unless it names two (:func:`_one_model_a_deployment`)."""
    entry: dict[str, Any] = {"requested": asked, "served": named, "answers": count}
    spelling = same_model(asked, named)
    if spelling is None and (deployed := deployment(asked)) is not None:
        spelling = {"deployment": deployed}
    return entry | {"differs": spelling is None} | (spelling or {})


def _one_model_a_deployment(served: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """*served* with every answer of a deployment that the provider says two models served
    (``gpt-4o-2024-08-06`` and ``gpt-4o-mini`` for ``azure/prod-chat``) flagged ``differs``:
    which one the deployment is, nothing says, but not both."""
    models: dict[str, list[str]] = {}
    for entry in served:
        if "deployment" in entry:
            models.setdefault(entry["requested"], []).append(entry["served"])
    mixed = {
        asked
        for asked, named in models.items()
        if any(not _one_model(named[0], other) for other in named[1:])
    }
    return [entry | {"differs": True} if entry["requested"] in mixed else entry for entry in served]


def _one_model(one: str, other: str) -> bool:
    """Whether two served names are one model (either may be the alias of the other)."""
    return same_model(one, other) is not None or same_model(other, one) is not None


DEPLOYMENT_HOSTS = frozenset({"azure", "azure_ai"})
"""The hosts (:data:`HOSTS`) whose requests name a deployment, named by its owner."""


def deployment(asked: str) -> str | None:
    """The deployment *asked* names (``prod-chat`` of ``azure/prod-chat``), or None: a name on
    an Azure route (:data:`DEPLOYMENT_HOSTS`) that names no maker's model (:data:`MAKERS`).
    ``azure/gpt-4o`` names a model, compared as any other."""
    host, prefix, bare, _ = _parts(asked)
    if host[:-1].casefold() not in DEPLOYMENT_HOSTS or prefix:
        return None
    named = any(made.match(bare) is not None for made in _MADE_BY.values())
    return None if named else bare


def same_model(asked: str, named: str) -> dict[str, str] | None:
    """How *named* spells the model *asked* for (``{}``: the same name; else its ``snapshot``,
    ``revision``, ``reordered``, ``prefix``, ``host`` and ``version``), or None when it names
    another model."""
    if named == asked:
        return {}
    asked_host, asked_prefix, asked_bare, asked_version = _parts(asked)
    named_host, named_prefix, named_bare, named_version = _parts(named)
    spelling = _same_bare(_key(asked_bare), _key(named_bare))
    if spelling is None:
        return None
    for kind, ours, theirs in (
        ("prefix", asked_prefix, named_prefix),
        ("host", asked_host, named_host),
        ("version", asked_version, named_version),
    ):
        if ours == theirs:
            continue
        if kind != "prefix" and ours and theirs and ours.casefold() != theirs.casefold():
            return None  # two routes, or two Bedrock versions: not one model's spellings
        spelling[kind] = ours or theirs
    return spelling


def _same_bare(alias: str, served: str) -> dict[str, str] | None:
    """How *served* spells *alias* (both without prefix, as :func:`_key` gives them), or
    None: the same words, its snapshot or revision, either with the version moved."""
    if served == alias:
        return {}
    moved = {"reordered": "version"}
    if in_order(served) == in_order(alias):
        return moved
    date = snapshot_date(alias, served)
    number = numbered_revision(alias, served)
    if date is None and number is None:
        return None
    spelling = {"snapshot": date} if date else {"revision": str(number)}
    return spelling if served.startswith(alias.removesuffix("-latest")) else spelling | moved


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


HOSTS = frozenset(
    {
        "azure",
        "azure_ai",
        "bedrock",
        "bedrock_converse",
        "vertex_ai",
        "vertex_ai_beta",
        "openrouter",
        "together_ai",
        "fireworks_ai",
        "groq",
        "deepinfra",
        "cerebras",
        "sambanova",
        "nvidia_nim",
        "databricks",
        "sagemaker",
        "watsonx",
        "huggingface",
        "hosted_vllm",
        "ollama",
        "ollama_chat",
        "litellm_proxy",
    }
)
"""The prefixes (LiteLLM's, without case) of a route that serves other makers' models:
``azure/gpt-4o`` is ``gpt-4o`` on Azure. The maker's own API (``openai/``) is a maker's."""

BEDROCK_ID = re.compile(
    r"((?:us|eu|apac|jp|au|ca|us-gov|global)\.)?([a-z]+)\.(.+)-(v\d+:\d+)(?::\d+k)?",
    re.IGNORECASE,
)
"""A Bedrock model id: an inference profile's region, the maker, the model, its version
(``us.anthropic.claude-sonnet-4-5-20250929-v1:0``; ``...-v1:0:200k`` a context size)."""

BEDROCK_MAKERS: Mapping[str, str] = MappingProxyType(
    {
        "anthropic": "anthropic",
        "meta": "meta",
        "amazon": "amazon",
        "mistral": "mistralai",
        "cohere": "cohere",
        "deepseek": "deepseek",
        "openai": "openai",
        "qwen": "qwen",
    }
)
"""A Bedrock id's maker and the :data:`MAKERS` entry whose names its models begin with."""


def _parts(name: str) -> tuple[str, str, str, str]:
    """*name* as (``host/``, the maker's prefix, the model, Bedrock's version), "" for each
    it lacks: ``bedrock/us.anthropic.claude-3-haiku-20240307-v1:0`` is ``claude-3-haiku-...``
    on Bedrock, its prefix ``us.anthropic.``, its version ``v1:0``."""
    host, slash, rest = name.partition("/")
    if slash and host.casefold() in HOSTS:
        host += slash
    else:
        host, rest = "", name
    prefix, bare = maker_prefix(rest)
    if prefix:
        return host, prefix, bare, ""
    found = BEDROCK_ID.fullmatch(rest)
    if found is None:
        return host, "", rest, ""
    region, maker, bare, version = found.groups()
    made = _MADE_BY.get(BEDROCK_MAKERS.get(maker.casefold(), ""))
    if made is None or made.match(bare) is None:
        return host, "", rest, ""
    return host, f"{region or ''}{maker}.", bare, version


def in_order(name: str) -> str:
    """*name* with its version first after its family's word, so that two word orders read
    alike (``claude-sonnet-4-5`` and ``claude-4-5-sonnet`` are ``claude-4-5-sonnet``). The
    version is the one run of numbers between dashes; a name with none, or with two
    (``gemini-1-5-pro-2``), is kept as it is: which number is the version is not known."""
    words = name.split("-")
    numbers = [i for i, word in enumerate(words) if word.isascii() and word.isdigit()]
    if not numbers or numbers[0] == 0 or numbers[-1] - numbers[0] != len(numbers) - 1:
        return name
    first, last = numbers[0], numbers[-1] + 1
    return "-".join([words[0], *words[first:last], *words[1:first], *words[last:]])


def _key(name: str) -> str:
    """*name* as it is compared: without case, a dot between digits read as a dash (OpenRouter
    writes ``claude-3.5-sonnet`` for Anthropic's ``claude-3-5-sonnet``), and a dash between
    the family's word and a version joined to it (Bedrock's ``llama3-1-70b-instruct`` is
    ``llama-3.1-70b-instruct``; Hugging Face's ``Qwen2.5`` is ``qwen-2.5``)."""
    dashed = re.sub(r"(?<=\d)\.(?=\d)", "-", name.casefold())
    return re.sub(r"^([a-z]+)(?=\d)", r"\1-", dashed, count=1)


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
    """*suffix* matched whole after *alias* (or its stem before ``-latest``) in *named*, the
    two compared in either word order (:func:`in_order`). A suffix is at most 12 characters:
    only the last 12 places are tried, so a long name is read in linear time."""
    stems = {in_order(alias), in_order(alias.removesuffix("-latest"))} - {""}
    for at in range(max(1, len(named) - 12), len(named)):
        found = suffix.fullmatch(named, at)
        if found is not None and in_order(named[:at]) in stems:
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
