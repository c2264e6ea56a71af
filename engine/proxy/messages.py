"""Anthropic's Messages API, as the proxy speaks it (`POST …/v1/messages`): translated into the canonical Chat
Completions conversation on the way in, and the gated chat completion translated back into a `message`.

In: `system` becomes a system message, and so does each system message among the messages (Claude Code sends its
environment so), in its place; an assistant's `tool_use` blocks its tool calls (the input as JSON text); a user's
`tool_result` blocks one tool message each, in order, before the rest of its turn's text (a result flagged
`is_error` reads "Error: …", as the proxy's own rejections do): so such a message continues the client's turn
whatever stands beside its results (engine.proxy.turn). A tool_use in the history of a tool no longer sent is
history like any other. Custom tools become function tools; Anthropic's server tools (a `type` such as
web_search_20250305), which a Chat Completions upstream cannot run, are left out and named in `left_out_tools`, as
the request's fields that ask for more than it can give are named in `left_out_fields` (the beta features a client
announces in `anthropic-beta` ask nothing of the proxy). A user's image blocks go upstream as image parts beside
its text, and a tool_result's images go after the results in a user message of their own (a tool message takes
text); elsewhere (a system prompt) an image is refused, as a document is anywhere, naming the block. Extended
thinking blocks sent back are dropped, as no Chat Completions upstream can read them.

Out: a `message` with a text block, then a `tool_use` block per call (its id the upstream call's, repaired; its
input the arguments it must run with), or the same as Anthropic's named stream events. Errors in Anthropic's shape,
`{"type": "error", "error": {"type", "message"}}`.
"""

import json
import re
import uuid
from dataclasses import replace

from ..config import TOOL_NAME_PATTERN, ValidationError
from .request import read_request
from .stream import Call, End, Failure, KeepAlive, Start, Text, pieces_of, server_sent_events

NAME = "messages"

ERROR_PREFIX = "Error: "
THINKING_BLOCKS = ("thinking", "redacted_thinking")
NOT_TEXT_BLOCKS = ("image", "document", "search_result", "container_upload")
TOOL_CHOICES = {"auto": "auto", "any": "required", "none": "none"}
# A chat completion's finish reason as a message's stop reason. A message stops for `tool_use` when it has
# tool_use blocks, whatever the finish reason said; without them, anything else ends the turn.
STOP_REASONS = {"length": "max_tokens", "content_filter": "refusal"}
# Anthropic's error types by status; any other 5xx is an `api_error`, any other 4xx an `invalid_request_error`.
ERROR_TYPES = {
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    504: "timeout_error",
    529: "overloaded_error",
}
# The fields the proxy serves (`metadata` only describes the request); any other a client sends — extended
# `thinking`, `context_management`, `output_config`, `top_k`, `mcp_servers`, … — asks for what a Chat Completions
# upstream cannot give: accepted, never sent upstream, and named in `left_out_fields`.
SERVED = (
    "model",
    "messages",
    "system",
    "max_tokens",
    "stream",
    "temperature",
    "top_p",
    "stop_sequences",
    "tools",
    "tool_choice",
    "metadata",
)
# What read_request names in the Chat Completions body, as the client wrote it.
CHAT_TOOL_FIELD = re.compile(r"tools\[(\d+)\]\.function\.(name|description|parameters)(.*)", re.DOTALL)
TOOL_FIELDS = {"name": "name", "description": "description", "parameters": "input_schema"}


def read(body, stored=None):
    """The client's Messages body as a ProxyRequest; ValidationError naming the field as the client wrote it.
    `stored`: the responses the proxy kept, which only the Responses API refers to."""
    if not isinstance(body, dict):
        raise ValidationError({"body": "must be a JSON object (an Anthropic Messages request)"})
    tools, where, left_out = _tools(body.get("tools"))
    left_out_fields = tuple(key for key, value in body.items() if key not in SERVED and value is not None)
    messages, fields = _messages(body.get("messages"), _system(body.get("system")))
    chat = {
        "model": _model(body.get("model", "")),
        "messages": messages,
        "max_tokens": _max_tokens(body.get("max_tokens")),
        "stream": _flag(body.get("stream", False), "stream"),
        **_sampling(body),
        **_tool_choice(body.get("tool_choice"), {tool["function"]["name"] for tool in tools}),
    }
    if tools:
        chat["tools"] = tools
    try:
        request = read_request(chat)
    except ValidationError as error:
        raise _as_written(error, where, fields) from None
    return replace(request, api=NAME, left_out_tools=tuple(left_out), left_out_fields=left_out_fields)


def _model(model):
    if not isinstance(model, str):
        raise ValidationError({"model": "must be a string"})
    return model


def _flag(value, field):
    if not isinstance(value, bool):
        raise ValidationError({field: "must be true or false"})
    return value


def _max_tokens(value):
    if value is None:
        raise ValidationError({"max_tokens": "is required: the most tokens the answer may take (a whole number)"})
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValidationError({"max_tokens": "must be a whole number of at least 1"})
    return value


def _sampling(body):
    fields = {}
    for field in ("temperature", "top_p"):
        value = body.get(field)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValidationError({field: "must be a number"})
        fields[field] = value
    stop = body.get("stop_sequences")
    if stop is not None:
        if not isinstance(stop, list) or not all(isinstance(sequence, str) for sequence in stop):
            raise ValidationError({"stop_sequences": "must be a list of strings"})
        if stop:
            fields["stop"] = stop
    return fields


def _text_of_blocks(blocks, where, what):
    """The text of a string or a list of text blocks (joined by blank lines), refusing any other block."""
    if isinstance(blocks, str):
        return blocks
    if not isinstance(blocks, list):
        raise ValidationError({where: f"must be a string or a list of text blocks ({what})"})
    return "\n\n".join(_text_block(block, f"{where}[{index}]") for index, block in enumerate(blocks))


def _text_block(block, where, kinds="text"):
    """A text block's text; `kinds`: the blocks that may stand where it is, for the message refusing another."""
    if not isinstance(block, dict):
        raise ValidationError({where: "must be a content block: an object with a `type`"})
    kind = block.get("type")
    if kind in NOT_TEXT_BLOCKS:
        raise ValidationError(
            {where: f"{kind} blocks cannot be sent: the agent's upstream (Chat Completions) takes text"}
        )
    if kind != "text":
        raise ValidationError({f"{where}.type": f"must be {kinds} here"})
    text = block.get("text")
    if not isinstance(text, str):
        raise ValidationError({f"{where}.text": "is required: a string"})
    return text


def _system(system, where="system"):
    """The top-level system prompt, or a system message among the messages, as a system message (none when empty)."""
    if system is None:
        return []
    text = _text_of_blocks(system, where, "the system prompt")
    return [{"role": "system", "content": text}] if text else []


def _messages(messages, system):
    """(the chat messages, after the `system` ones; {a call's or a result's id field in the chat body: the field as
    the client wrote it})."""
    if not isinstance(messages, list) or not messages:
        raise ValidationError({"messages": "is required: a non-empty list of user and assistant messages"})
    chat, fields = list(system), {}
    for index, message in enumerate(messages):
        where = f"messages[{index}]"
        if not isinstance(message, dict):
            raise ValidationError({where: "must be an object with a role and a content"})
        role, content = message.get("role"), message.get("content")
        if role not in ("user", "assistant", "system"):
            raise ValidationError({f"{where}.role": "must be user, assistant or system"})
        if role == "system":
            chat.extend(_system(content, f"{where}.content"))
        elif isinstance(content, str):
            chat.append({"role": role, "content": content})
        elif not isinstance(content, list) or not (content or role == "assistant"):
            raise ValidationError({f"{where}.content": "must be a string or a non-empty list of content blocks"})
        elif role == "assistant":
            translated, call_places = _assistant(content, where)
            for number, place in enumerate(call_places):
                fields[f"messages[{len(chat)}].tool_calls[{number}].id"] = f"{place}.id"
            chat.append(translated)
        else:
            for message, place in _user(content, where):
                if place is not None:
                    fields[f"messages[{len(chat)}].tool_call_id"] = f"{place}.tool_use_id"
                chat.append(message)
    return chat, fields


def _assistant(blocks, where):
    """(an assistant turn's blocks as one chat message: its text, then its tool_use blocks as tool calls; where each
    call's block is)."""
    texts, calls, places = [], [], []
    for index, block in enumerate(blocks):
        block_where = f"{where}.content[{index}]"
        kind = block.get("type") if isinstance(block, dict) else None
        if kind in THINKING_BLOCKS:
            continue
        if kind == "tool_result":
            raise ValidationError({block_where: "tool_result blocks belong in user messages"})
        if kind != "tool_use":
            texts.append(_text_block(block, block_where, "text or tool_use"))
            continue
        call_id, name, arguments = block.get("id"), block.get("name"), block.get("input", {})
        if not isinstance(call_id, str) or not call_id:
            raise ValidationError({f"{block_where}.id": "is required: the tool_use id"})
        if not isinstance(name, str) or not name:
            raise ValidationError({f"{block_where}.name": "is required: the tool's name"})
        if not isinstance(arguments, dict):
            raise ValidationError({f"{block_where}.input": "must be an object"})
        function = {"name": name, "arguments": json.dumps(arguments, ensure_ascii=False)}
        calls.append({"id": call_id, "type": "function", "function": function})
        places.append(block_where)
    message = {"role": "assistant", "content": "".join(texts)}
    if calls:
        message["tool_calls"] = calls
    return message, places


def _user(blocks, where):
    """A user turn's blocks as chat messages, each with where its tool_result block is (None for the rest): a tool
    message per tool_result, in order, with its text; then a user message (if there is anything for one) with the
    images of those results (a tool message takes only text), then the turn's own text and images, one part per
    block."""
    results, result_images, parts = [], [], []
    for index, block in enumerate(blocks):
        block_where = f"{where}.content[{index}]"
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "tool_use":
            raise ValidationError({block_where: "tool_use blocks belong in assistant messages"})
        if kind == "tool_result":
            message, images = _tool_message(block, block_where)
            results.append((message, block_where))
            result_images += images
        elif kind == "image":
            parts.append(_image_part(block, block_where))
        else:
            parts.append({"type": "text", "text": _text_block(block, block_where, "text, image or tool_result")})
    parts = [*result_images, *parts]
    return [*results, *([({"role": "user", "content": parts}, None)] if parts else [])]


def _image_part(block, where):
    """An image block (a user's, or in a tool's result) as a Chat Completions image part: its URL, or its base64
    data as a data URL."""
    source = block.get("source")
    kind = source.get("type") if isinstance(source, dict) else None
    if kind == "url" and isinstance(source.get("url"), str) and source["url"]:
        url = source["url"]
    elif kind == "base64" and all(isinstance(source.get(key), str) and source[key] for key in ("media_type", "data")):
        url = f"data:{source['media_type']};base64,{source['data']}"
    else:
        raise ValidationError(
            {f"{where}.source": 'must be {"type": "base64", "media_type", "data"} or {"type": "url", "url"}'}
        )
    return {"type": "image_url", "image_url": {"url": url}}


def _tool_message(block, where):
    """(a tool_result block as a tool message: its text; its images, as image parts)."""
    call_id = block.get("tool_use_id")
    if not isinstance(call_id, str) or not call_id:
        raise ValidationError({f"{where}.tool_use_id": "is required: the id of the tool_use it answers"})
    content = block.get("content")
    images = []
    if isinstance(content, list):  # a tool's result may hold images (Claude Code's Read of a picture)
        texts = []
        for index, part in enumerate(content):
            part_where = f"{where}.content[{index}]"
            if isinstance(part, dict) and part.get("type") == "image":
                images.append(_image_part(part, part_where))
            else:
                texts.append(_text_block(part, part_where, "text or image"))
        text = "\n\n".join(texts)
    else:
        text = "" if content is None else _text_of_blocks(content, f"{where}.content", "the tool's result")
    is_error = _flag(block.get("is_error", False), f"{where}.is_error")
    if is_error and not text.startswith(ERROR_PREFIX):
        text = ERROR_PREFIX + text
    return {"role": "tool", "tool_call_id": call_id, "content": text}, images


def _tools(tools):
    """(the function tools, where each was in the client's list, the server tools left out by type)."""
    if tools is None:
        return [], [], []
    if not isinstance(tools, list):
        raise ValidationError({"tools": "must be a list of tools"})
    functions, where, left_out = [], [], []
    for index, tool in enumerate(tools):
        tool_where = f"tools[{index}]"
        if not isinstance(tool, dict):
            raise ValidationError({tool_where: "must be a tool: an object with a name and an input_schema"})
        kind = tool.get("type", "custom")
        if kind is None or kind == "custom":
            functions.append(_function_tool(tool, tool_where))
            where.append(tool_where)
        elif isinstance(kind, str):
            left_out.append(kind)
        else:
            raise ValidationError({f"{tool_where}.type": "must be a string"})
    return functions, where, left_out


def _function_tool(tool, where):
    name = tool.get("name")
    if not isinstance(name, str) or not TOOL_NAME_PATTERN.match(name):
        raise ValidationError({f"{where}.name": "must be 1 to 64 letters, digits, underscores or hyphens"})
    schema = tool.get("input_schema")
    if not isinstance(schema, dict):
        raise ValidationError({f"{where}.input_schema": "is required: a JSON Schema object"})
    function = {"name": name, "parameters": schema}
    if "description" in tool:
        function["description"] = tool["description"]
    return {"type": "function", "function": function}


def _tool_choice(choice, names):
    """`tool_choice` and `parallel_tool_calls` of the chat body."""
    if choice is None:
        return {}
    if not isinstance(choice, dict) or not isinstance(choice.get("type"), str):
        raise ValidationError({"tool_choice": 'must be an object with a type: "auto", "any", "tool" or "none"'})
    kind = choice["type"]
    if kind == "tool":
        name = choice.get("name")
        if not isinstance(name, str) or name not in names:
            raise ValidationError({"tool_choice.name": "must name one of the tools sent"})
        fields = {"tool_choice": {"type": "function", "function": {"name": name}}}
    elif kind in TOOL_CHOICES:
        fields = {"tool_choice": TOOL_CHOICES[kind]}
    else:
        raise ValidationError({"tool_choice.type": "must be auto, any, tool or none"})
    if _flag(choice.get("disable_parallel_tool_use", False), "tool_choice.disable_parallel_tool_use"):
        fields["parallel_tool_calls"] = False
    return fields


def _as_written(error, where, fields):
    """A ValidationError of the chat body, its field named as in the client's body: `where` each function tool was
    in its tools, `fields` the client's field of each call's and result's id."""
    written = {}
    for field, message in error.errors.items():
        match = CHAT_TOOL_FIELD.fullmatch(field)
        if match:
            index, name, rest = match.groups()
            field = f"{where[int(index)]}.{TOOL_FIELDS[name]}{rest}"
        written[fields.get(field, field)] = message
    return ValidationError(written)


def answer(exchange, request):
    return message_of(pieces_of(exchange.completion))


def kept(exchange, request):
    """Nothing: a Messages client sends its whole conversation with every request."""
    return None


def tool_input(arguments):
    """A call's JSON arguments as a tool_use block's input; no arguments at all are an empty input."""
    return json.loads(arguments) if arguments.strip() else {}


def usage_of(usage):
    usage = usage or {}
    return {"input_tokens": usage.get("prompt_tokens", 0), "output_tokens": usage.get("completion_tokens", 0)}


def stop_reason(finish_reason, called):
    return "tool_use" if called else STOP_REASONS.get(finish_reason, "end_turn")


def _message_head(start):
    return {
        "id": f"msg_{uuid.uuid4().hex}",
        "type": "message",
        "role": "assistant",
        "model": start.model or "",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 0, "output_tokens": 0},
    }


def message_of(pieces):
    """The `message` an answer's pieces make."""
    message = None
    for piece in pieces:
        if isinstance(piece, Start):
            message = _message_head(piece)
        elif isinstance(piece, Text):
            content = message["content"]
            if content and content[-1]["type"] == "text":
                content[-1]["text"] += piece.text
            else:
                content.append({"type": "text", "text": piece.text})
        elif isinstance(piece, Call):
            block = {"type": "tool_use", "id": piece.id, "name": piece.name, "input": tool_input(piece.arguments)}
            message["content"].append(block)
        elif isinstance(piece, End):
            called = any(block["type"] == "tool_use" for block in message["content"])
            message["stop_reason"] = stop_reason(piece.finish_reason, called)
            message["usage"] = usage_of(piece.usage)
    return message


def message_events(pieces):
    """Anthropic's stream events of an answer: `message_start`; per block `content_block_start`, its deltas
    (`text_delta`s as the text comes, one `input_json_delta` with a call's whole arguments) and
    `content_block_stop`; then `message_delta` with the stop reason and the usage, and `message_stop`."""
    index, open_block, called = -1, None, False

    def close():
        return [{"type": "content_block_stop", "index": index}] if open_block else []

    for piece in pieces:
        if isinstance(piece, Start):
            yield {"type": "message_start", "message": _message_head(piece)}
        elif isinstance(piece, Text):
            if open_block != "text":
                yield from close()
                index, open_block = index + 1, "text"
                yield {"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}
            yield {"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": piece.text}}
        elif isinstance(piece, Call):
            yield from close()
            index, open_block, called = index + 1, "tool_use", True
            block = {"type": "tool_use", "id": piece.id, "name": piece.name, "input": {}}
            yield {"type": "content_block_start", "index": index, "content_block": block}
            if piece.arguments.strip():
                delta = {"type": "input_json_delta", "partial_json": piece.arguments}
                yield {"type": "content_block_delta", "index": index, "delta": delta}
        elif isinstance(piece, Failure):  # the upstream failed mid-stream: Anthropic's streams end with an error
            yield error_body(piece.status, piece.message)
        elif isinstance(piece, KeepAlive):
            yield {"type": "ping"}
        elif isinstance(piece, End):
            yield from close()
            open_block = None
            delta = {"stop_reason": stop_reason(piece.finish_reason, called), "stop_sequence": None}
            yield {"type": "message_delta", "delta": delta, "usage": usage_of(piece.usage)}
            yield {"type": "message_stop"}


def stream(pieces, request):
    yield from server_sent_events(message_events(pieces), named=True)


def error_body(status, message, error_type=None, code=None, param=None):
    """Anthropic's error shape, which Anthropic clients read: its type follows the status (`code` and `param` have
    no place in it; a field is named in the message)."""
    default = "api_error" if status >= 500 else "invalid_request_error"
    return {"type": "error", "error": {"type": ERROR_TYPES.get(status, default), "message": message}}
