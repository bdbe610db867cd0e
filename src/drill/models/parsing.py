"""Reading one tool call out of a model's text.

Accepted forms (the first that is present decides):

1. Hermes tags: `<tool_call>{"name": "restart", "arguments": {"service": "db"}}</tool_call>`.
   A missing closing tag is accepted when the JSON inside is complete (servers strip stop strings),
   and so is a one-element list inside the tags (`<tool_call>[{...}]</tool_call>`, SmolLM2's own form).
2. ReAct with a named action: `Action: restart` then `Action Input: {"service": "db"}`.
3. A JSON object anywhere in the text: bare, inside a ```json fence, or after `Action:` in the
   `Thought: ... Action: {...}` form, with prose around it allowed.

The call object names its tool with `"name"` (or `"tool"`), gives `"arguments"` (or `"parameters"`)
as a JSON object or a string holding one, and may come wrapped as `{"function": {...}}` (OpenAI shape).
Missing arguments mean `{}`.

Whatever cannot be read becomes `Action.unparseable` with a message written for the model: empty
output, no call found, more than one call (none is executed), truncated or invalid JSON, a call
without a tool name, arguments that are not an object. An unknown tool name or arguments of the
wrong type are left to the environment, which rejects them with its own message.
"""

from __future__ import annotations

import json
import re
from typing import Any

from drill.core.text import MAX_NESTING, too_deep
from drill.core.types import Action, Generation

EXAMPLE_CALL = '<tool_call>{"name": "TOOL_NAME", "arguments": {"ARG": "VALUE"}}</tool_call>'

_HERMES_BLOCK = re.compile(r"<tool_call>(.*?)</tool_call>", re.DOTALL)
_HERMES_OPEN = "<tool_call>"
_REACT_NAMED = re.compile(r"Action:\s*([A-Za-z_][\w.\-]*)\s*\n\s*Action Input:\s*", re.IGNORECASE)
_FENCE = re.compile(r"```[A-Za-z]*\s*\n?|```")
_DECODER = json.JSONDecoder()


class ToolCallParseError(ValueError):
    """The text holds no single readable tool call. The message is shown to the model."""


def parse_action(text: str, generation: Generation | None = None) -> Action:
    """The tool call in `text` as an Action carrying the raw text, or an unparseable Action saying why."""
    try:
        tool, arguments = parse_tool_call(text)
    except ToolCallParseError as exc:
        return Action.unparseable(text, str(exc), generation)
    return Action(tool=tool, arguments=arguments, raw=text, generation=generation)


def parse_tool_call(text: str) -> tuple[str, dict[str, Any]]:
    """(tool name, arguments) of the one tool call in `text`; raises ToolCallParseError otherwise."""
    if not text.strip():
        raise ToolCallParseError(f"the reply is empty; answer with one tool call, e.g. {EXAMPLE_CALL}")
    blocks = _hermes_blocks(text)
    if len(blocks) > 1:
        raise ToolCallParseError(f"found {len(blocks)} <tool_call> blocks; send exactly one call per turn "
                                 "(none of them was executed)")
    if blocks:
        return _call_from_block(blocks[0])
    named = list(_REACT_NAMED.finditer(text))
    if len(named) > 1:
        raise ToolCallParseError(f"found {len(named)} 'Action:' lines; send exactly one action per turn "
                                 "(none of them was executed)")
    if named:
        return _react_named_call(text, named[0])
    return _call_from_prose(text)


def _hermes_blocks(text: str) -> list[str]:
    blocks = _HERMES_BLOCK.findall(text)
    tail = text[text.rfind("</tool_call>") + len("</tool_call>"):] if blocks else text
    if _HERMES_OPEN in tail:
        blocks.append(tail[tail.index(_HERMES_OPEN) + len(_HERMES_OPEN):])
    return blocks


def _call_from_block(block: str) -> tuple[str, dict[str, Any]]:
    """A <tool_call> block must hold exactly one JSON object (a ```json fence inside is tolerated)."""
    inner = _FENCE.sub("", block).strip()
    if not inner:
        raise ToolCallParseError(f"the <tool_call> block is empty; put the JSON call inside it: {EXAMPLE_CALL}")
    if not inner.startswith(("{", "[")):
        raise ToolCallParseError(f"the <tool_call> block must hold a JSON object, but starts with {_snippet(inner)}")
    value, end = _decode(inner, 0)
    rest = inner[end:].strip()
    if rest:
        raise ToolCallParseError(f"unexpected text after the JSON object in <tool_call>: {_snippet(rest)}")
    if isinstance(value, list):  # SmolLM2 / APIGen write a list of calls: one is fine, more are not
        if len(value) != 1:
            raise ToolCallParseError(f"the <tool_call> block holds a list of {len(value)} calls; send exactly one "
                                     "call per turn" + (" (none of them was executed)" if value else ""))
        value = value[0]
    return _normalise(value)


def _react_named_call(text: str, match: re.Match[str]) -> tuple[str, dict[str, Any]]:
    start = match.end()
    if text[start:start + 1] != "{":
        raise ToolCallParseError("'Action Input:' must be followed by a JSON object of arguments, "
                                 f"got {_snippet(text[start:])}")
    arguments, _ = _decode(text, start)
    return _normalise({"name": match.group(1), "arguments": arguments})


def _call_from_prose(text: str) -> tuple[str, dict[str, Any]]:
    """Scan for top-level JSON objects; exactly one must be a tool call."""
    calls: list[Any] = []
    other_objects = 0
    first_failure: ToolCallParseError | None = None
    position = text.find("{")
    while position != -1:
        try:
            value, end = _decode(text, position)
        except ToolCallParseError as exc:
            # Only a brace that opens a key ("{"name" / "{'name") counts as an attempted call; prose braces do not.
            if first_failure is None and re.match(r"\{\s*[\"']", text[position:]):
                first_failure = exc
            position = text.find("{", position + 1)
            continue
        if _looks_like_call(value):
            calls.append(value)
        else:
            other_objects += 1
        position = text.find("{", end)
    if len(calls) > 1:
        raise ToolCallParseError(f"found {len(calls)} tool calls; send exactly one call per turn "
                                 "(none of them was executed)")
    if calls:
        return _normalise(calls[0])
    if first_failure is not None:
        raise first_failure
    if other_objects:
        raise ToolCallParseError('found a JSON object but no "name" field saying which tool to call; '
                                 f"write the call as {EXAMPLE_CALL}")
    raise ToolCallParseError(f"no tool call found in the reply; answer with one tool call, e.g. {EXAMPLE_CALL}")


def _decode(text: str, start: int) -> tuple[Any, int]:
    try:
        return _DECODER.raw_decode(text, start)
    except RecursionError:
        raise ToolCallParseError(f"the tool call's JSON nests objects and arrays too deep (at most {MAX_NESTING})"
                                 ) from None
    except json.JSONDecodeError as exc:
        if _truncated(text[start:]):
            raise ToolCallParseError(
                f"the tool call's JSON is cut off: the reply ends ({_snippet(text[-30:])}) before the object is "
                "closed; write a shorter call that fits in the reply"
            ) from None
        raise ToolCallParseError(
            f"invalid JSON in the tool call: {exc.msg} at line {exc.lineno} column {exc.colno} "
            f"(near {_snippet(exc.doc[exc.pos:])})"
        ) from None
    except ValueError as exc:  # a number of more digits than Python converts (`sys.get_int_max_str_digits`)
        raise ToolCallParseError(f"invalid number in the tool call: {str(exc).split(';')[0]}") from None


def _truncated(fragment: str) -> bool:
    """True when the object opened at the start of `fragment` is never closed (brackets counted outside strings)."""
    depth, in_string, escaped = 0, False, False
    for char in fragment:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "{[":
            depth += 1
        elif char in "}]":
            depth -= 1
            if depth == 0:
                return False
    return True


def _looks_like_call(value: Any) -> bool:
    return isinstance(value, dict) and ("name" in value or "tool" in value or isinstance(value.get("function"), dict))


def _normalise(value: Any) -> tuple[str, dict[str, Any]]:
    if too_deep(value, MAX_NESTING + 1):  # the call object, then its arguments: no message below may walk deeper
        raise ToolCallParseError(f"the tool call nests objects and arrays more than {MAX_NESTING} deep")
    if not isinstance(value, dict):
        raise ToolCallParseError(f"the tool call must be a JSON object, got {_json_type(value)}")
    if isinstance(value.get("function"), dict):
        value = value["function"]
    name = value.get("name", value.get("tool"))
    if name is None:
        raise ToolCallParseError(f'the tool call has no "name" field saying which tool to call; write {EXAMPLE_CALL}')
    if not isinstance(name, str) or not name.strip():
        raise ToolCallParseError(f'the tool call\'s "name" must be a non-empty string, got {json.dumps(name)}')
    arguments = value.get("arguments", value.get("parameters", {}))
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except (ValueError, RecursionError):  # not JSON, a number too long to convert, or nested too deep
            raise ToolCallParseError(
                f'"arguments" of {name!r} is a string that is not JSON ({_snippet(arguments)}); '
                "give the arguments as a JSON object"
            ) from None
        if too_deep(arguments):  # decoded from a string: the whole-call check above did not see inside it
            raise ToolCallParseError(f'"arguments" of {name!r} nest objects and arrays more than {MAX_NESTING} deep')
    if not isinstance(arguments, dict):
        raise ToolCallParseError(f'"arguments" of {name!r} must be a JSON object, got {_json_type(arguments)}')
    return name.strip(), arguments


def _json_type(value: Any) -> str:
    names = {dict: "an object", list: "an array", str: "a string", bool: "a boolean", int: "a number",
             float: "a number", type(None): "null"}
    return f"{names.get(type(value), type(value).__name__)} ({_snippet(json.dumps(value))})"


def _snippet(text: str, limit: int = 40) -> str:
    text = " ".join(text.split())
    return repr(text if len(text) <= limit else text[:limit - 3] + "...")
