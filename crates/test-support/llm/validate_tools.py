"""Checks tool definitions against the types the LLM vendors' own Python
SDKs publish for their APIs: OpenAI's ChatCompletionFunctionToolParam
(Chat Completions `tools`) and Anthropic's ToolParam (Messages `tools`).

Usage: python validate_tools.py < {"openai": [...], "anthropic": [...]}
Prints "valid: N openai, M anthropic" and exits 0, or names each problem
and exits 1. Every level that is a TypedDict is checked for unknown and
missing keys as well (pydantic alone lets unknown keys through), and the
values by pydantic.
"""

import json
import sys
import typing

import pydantic
import typing_extensions
from anthropic.types import ToolParam
from openai.types.chat import ChatCompletionFunctionToolParam


def unwrap(kind):
    """The TypedDict inside Required[...], NotRequired[...], Optional[...];
    None for anything else."""
    while True:
        origin = typing.get_origin(kind)
        args = typing.get_args(kind)
        if origin in (typing.Required, typing.NotRequired, typing.Annotated):
            kind = args[0]
        elif origin is typing.Union:
            # Only an optional TypedDict is checked key by key; a union
            # with any other mapping lets any key through.
            others = [a for a in args if a is not type(None)]
            return others[0] if len(others) == 1 and typing_extensions.is_typeddict(others[0]) else None
        else:
            return kind if typing_extensions.is_typeddict(kind) else None


def keys(value, kind, path, problems):
    if not isinstance(value, dict):
        problems.append(f"{path}: not an object")
        return
    hints = typing.get_type_hints(kind, include_extras=True)
    for key in value:
        if key not in hints:
            problems.append(f"{path}: unknown key {key!r}")
    for key in kind.__required_keys__:
        if key not in value:
            problems.append(f"{path}: missing key {key!r}")
    for key, hint in hints.items():
        inner = unwrap(hint)
        if inner is not None and key in value:
            keys(value[key], inner, f"{path}.{key}", problems)


def main():
    definitions = json.load(sys.stdin)
    problems = []
    for vendor, kind in (("openai", ChatCompletionFunctionToolParam), ("anthropic", ToolParam)):
        adapter = pydantic.TypeAdapter(kind)
        for i, tool in enumerate(definitions[vendor]):
            path = f"{vendor}[{i}]"
            try:
                adapter.validate_python(tool, strict=True)
            except pydantic.ValidationError as error:
                problems.append(f"{path}: {error}")
            keys(tool, kind, path, problems)
    for problem in problems:
        print(problem)
    if problems:
        sys.exit(1)
    print(f"valid: {len(definitions['openai'])} openai, {len(definitions['anthropic'])} anthropic")


main()
