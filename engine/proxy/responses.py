"""OpenAI's Responses API, as the proxy speaks it (SPEC §8): function tools, translated into the canonical Chat
Completions conversation and back, as LiteLLM's Responses bridge serves providers that only have Chat Completions.

`read` turns `input` (a string, or message, function_call, function_call_output and item_reference items) and
`instructions` into chat messages (the images of an output after the outputs, as a user message: a tool message
takes text), function tools into chat tools, and leaves out the hosted tools an upstream cannot run through Chat
Completions (web_search, file_search, mcp, …), naming them in `left_out_tools`. Items referred to by
`item_reference` and the conversation of `previous_response_id` come from the responses the proxy kept (`stored`,
handed in: this module opens no database), so a conversation continued that way reads exactly as the one its
earlier request recorded, and joins its run.

`stream` turns the answer's pieces into the Responses events, whether the pieces arrive live or are cut from a
finished answer; `answer` is the response the last of those events carries, so both say the same. `kept` is what
to keep of an answered response for the requests that continue it.
"""

import re
import secrets
import time
from dataclasses import dataclass, field, fields

from ..config import TOOL_NAME_PATTERN, ValidationError
from . import chat_completions
from .request import ProxyRequest, read_request
from .stream import Call, End, Failure, KeepAlive, Start, Text, pieces_of, server_sent_events

NAME = "responses"
ROLES = ("user", "system", "developer", "assistant")
TEXT_PARTS = ("input_text", "output_text")
TOOL_CHOICES = ("auto", "none", "required")
# Sampling fields the upstream takes as they are; max_output_tokens goes up as max_tokens, text.format as
# response_format. Every other field a client sends (include, reasoning, text.verbosity, metadata, store,
# truncation, prompt_cache_key, …) has no meaning in Chat Completions: accepted, never sent upstream.
SAMPLING = {"temperature": (int, float), "top_p": (int, float)}
# The request's settings a response repeats, with what it says when the request left them out.
ECHOED = {
    "instructions": None,
    "tools": [],
    "tool_choice": "auto",
    "parallel_tool_calls": True,
    "temperature": None,
    "top_p": None,
    "max_output_tokens": None,
    "metadata": {},
    "previous_response_id": None,
    "store": True,
    "text": {"format": {"type": "text"}},
    "truncation": "disabled",
    "reasoning": None,
    "user": None,
}
INCOMPLETE = {"length": "max_output_tokens", "content_filter": "content_filter"}  # finish reason -> why
FAILED = {429: "rate_limit_exceeded"}  # an upstream's status -> the code of the failed response's error


@dataclass(frozen=True)
class ResponsesRequest(ProxyRequest):
    """A Responses request in the canonical form, with what its answer needs beyond it."""

    response_id: str = ""  # resp_…: the id of the response that answers it
    items: tuple = ()  # the conversation as items: the previous response's, then the request's, references resolved
    namespaced: dict = field(default_factory=dict)  # chat name -> (namespace, name) of a namespace's functions
    echo: dict = field(default_factory=dict)  # the settings its response repeats
    store: bool = True  # keep the response, for previous_response_id, item_reference and GET /responses/<id>


class NotStored(Exception):
    """A previous_response_id or an item_reference that names nothing the proxy kept: a 404 in OpenAI's shape."""

    def __init__(self, message, param, code=None):
        super().__init__(message)
        self.status = 404
        self.message = message
        self.param = param
        self.code = code


def read(body, stored=None):
    """The client's Responses body as a ResponsesRequest; ValidationError naming the field (`input[2].call_id`,
    `tools[0].name`) for anything the proxy cannot forward or gate, NotStored for a reference to nothing kept.
    `stored(response_id)` gives a kept response ({"response", "input"}) of the agent, or None."""
    if not isinstance(body, dict):
        raise ValidationError({"body": "must be a JSON object (an OpenAI Responses API request)"})
    instructions = body.get("instructions")
    if instructions is not None and not isinstance(instructions, str):
        raise ValidationError({"instructions": "must be a string"})
    previous, given = _previous_items(body, stored), _input_items(body, stored)
    items = [*previous, *(item for item, _ in given)]
    call_fields = ["previous_response_id"] * len(previous) + [field for _, field in given]
    tools, tool_places, left_out, namespaced = _chat_tools(body.get("tools"))
    messages, sources = chat_messages(items, instructions)
    chat = {
        "model": body.get("model", ""),
        "messages": messages,
        "tools": tools,
        "stream": body.get("stream", False),
        **_settings(body),
    }
    try:
        request = read_request(chat)
    except ValidationError as error:
        as_sent = {field: call_fields[index] for field, index in sources.items()}
        raise _named_as_sent(error, tool_places, as_sent) from None
    store = body.get("store", True)
    if not isinstance(store, bool):
        raise ValidationError({"store": "must be true or false"})
    return ResponsesRequest(
        **{
            **{name.name: getattr(request, name.name) for name in fields(ProxyRequest)},
            "api": NAME,
            "left_out_tools": tuple(left_out),
        },
        response_id=f"resp_{secrets.token_hex(24)}",
        items=tuple(items),
        namespaced=namespaced,
        echo={key: default if body.get(key) is None else body[key] for key, default in ECHOED.items()},
        store=store,
    )


def _previous_items(body, stored):
    """The conversation of the response `previous_response_id` names: its input, then its output."""
    previous_id = body.get("previous_response_id")
    if previous_id is None:
        return []
    if not isinstance(previous_id, str):
        raise ValidationError({"previous_response_id": "must be the id of a response (resp_…)"})
    kept = stored(previous_id) if stored is not None else None
    if kept is None:
        raise NotStored(
            f"Previous response with id '{previous_id}' not found.",
            "previous_response_id",
            "previous_response_not_found",
        )
    output = [_item(item, "previous_response_id", None) for item in kept["response"]["output"]]
    return [*kept["input"], *(item for item in output if item is not None)]


def _input_items(body, stored):
    """`input` as checked items, references resolved and reasoning items dropped: [(item, the client's field of its
    call_id: `input[1].call_id`, or the `input[1].id` of a reference)]."""
    given = body.get("input")
    if isinstance(given, str):
        return [({"type": "message", "role": "user", "content": given}, "input")]
    if given is None and body.get("previous_response_id") is None:
        raise ValidationError({"input": "is required: a string, or a list of input items"})
    if given is None:
        return []
    if not isinstance(given, list):
        raise ValidationError({"input": "must be a string, or a list of input items"})
    items = []
    for index, item in enumerate(given):
        where = f"input[{index}]"
        checked = _item(item, where, stored)
        if checked is not None:
            reference = isinstance(item, dict) and item.get("type") == "item_reference"
            items.append((checked, f"{where}.id" if reference else f"{where}.call_id"))
    return items


def _item(item, where, stored):
    """One input item, checked and reduced to what the conversation needs; None for a reasoning item."""
    if not isinstance(item, dict):
        raise ValidationError({where: "must be an object (an input item)"})
    kind = item.get("type", "message" if "role" in item else None)
    if kind == "message":
        return _message_item(item, where)
    if kind == "function_call":
        for key in ("call_id", "name", "arguments"):
            if not isinstance(item.get(key), str) or (key != "arguments" and not item[key]):
                raise ValidationError({f"{where}.{key}": "is required: a string"})
        namespace = item.get("namespace")
        if namespace is not None and not isinstance(namespace, str):
            raise ValidationError({f"{where}.namespace": "must be a string"})
        keys = ("type", "call_id", "name", "arguments", *(("namespace",) if namespace else ()))
        return {key: item[key] for key in keys}
    if kind == "function_call_output":
        if not isinstance(item.get("call_id"), str) or not item["call_id"]:
            raise ValidationError({f"{where}.call_id": "is required: the call_id of the function_call it answers"})
        text, images = _output(item.get("output"), where)
        return {"type": kind, "call_id": item["call_id"], "output": text, **({"images": images} if images else {})}
    if kind == "item_reference":
        return _referenced_item(item, where, stored)
    if kind == "reasoning":
        return None
    raise ValidationError(
        {f"{where}.type": "must be message, function_call, function_call_output, item_reference or reasoning"}
    )


def _message_item(item, where):
    role = item.get("role")
    if role not in ROLES:
        raise ValidationError({f"{where}.role": f"must be one of: {', '.join(ROLES)}"})
    content = item.get("content")
    if isinstance(content, str):
        return {"type": "message", "role": role, "content": content}
    if not isinstance(content, list):
        raise ValidationError({f"{where}.content": "must be a string or a list of content parts"})
    parts = []
    for index, part in enumerate(content):
        part_where = f"{where}.content[{index}]"
        kind = part.get("type") if isinstance(part, dict) else None
        if kind in TEXT_PARTS and isinstance(part.get("text"), str):
            parts.append({"type": kind, "text": part["text"]})
        elif kind == "refusal" and isinstance(part.get("refusal"), str):
            parts.append({"type": "output_text", "text": part["refusal"]})
        elif kind == "input_image" and role == "user" and isinstance(part.get("image_url"), str):
            parts.append({"type": kind, "image_url": part["image_url"]})
        else:
            raise ValidationError(
                {part_where: "takes input_text and output_text parts, and input_image parts with an image_url"}
            )
    return {"type": "message", "role": role, "content": parts}


def _output(output, where):
    """(a function_call_output's output as the text of a tool message: a string, or the text of its parts; the URLs
    of its input_image parts: a tool's result may be a picture, as Codex's view_image and the Agents SDK's image
    outputs are)."""
    if isinstance(output, str):
        return output, []
    if not isinstance(output, list):
        raise ValidationError({f"{where}.output": "must be a string, or a list of input_text and input_image parts"})
    texts, images = [], []
    for index, part in enumerate(output):
        kind = part.get("type") if isinstance(part, dict) else None
        if kind in TEXT_PARTS and isinstance(part.get("text") or "", str):
            texts.append(part.get("text") or "")
        elif kind == "input_image" and isinstance(part.get("image_url"), str) and part["image_url"]:
            images.append(part["image_url"])
        else:
            raise ValidationError(
                {f"{where}.output[{index}]": "must be an input_text part, or an input_image part with an image_url"}
            )
    return "".join(texts), images


def _referenced_item(item, where, stored):
    """The output item of a kept response that an item_reference names: its id is msg_… or fc_… followed by the
    response's own id and the item's place."""
    item_id = item.get("id")
    if not isinstance(item_id, str) or not item_id:
        raise ValidationError({f"{where}.id": "is required: the id of an earlier output item"})
    parts = item_id.split("_")
    kept = stored(f"resp_{parts[1]}") if stored is not None and len(parts) == 3 else None
    found = next(
        (entry for entry in (kept or {}).get("response", {}).get("output", []) if entry["id"] == item_id), None
    )
    if found is None:
        raise NotStored(f"Item with id '{item_id}' not found.", f"{where}.id")
    return _item(found, where, None)


def chat_messages(items, instructions=None):
    """(checked items as chat messages: the instructions as a system message first; an assistant message's text and
    the function calls after it as one assistant message (as a chat completion answers); each output as a tool
    message, and the images of outputs sent together as a user message after them (a tool message takes only text).
    {a call's or an output's id field in the chat body: the index of the item it came from})."""
    messages = [{"role": "system", "content": instructions}] if instructions else []
    sources, images = {}, []
    for index, item in enumerate(items):
        if images and item["type"] != "function_call_output":
            messages.append(_images_message(images))
            images = []
        if item["type"] == "message":
            messages.append({"role": item["role"], "content": _chat_content(item)})
        elif item["type"] == "function_call":
            call = {
                "id": item["call_id"],
                "type": "function",
                "function": {"name": _chat_name(item), "arguments": item["arguments"]},
            }
            last = messages[-1] if messages else None
            if last is None or last["role"] != "assistant":
                last = {"role": "assistant", "content": None, "tool_calls": []}
                messages.append(last)
            last["tool_calls"] = [*(last.get("tool_calls") or []), call]
            sources[f"messages[{len(messages) - 1}].tool_calls[{len(last['tool_calls']) - 1}].id"] = index
        else:
            sources[f"messages[{len(messages)}].tool_call_id"] = index
            messages.append({"role": "tool", "tool_call_id": item["call_id"], "content": item["output"]})
            images += item.get("images", [])
    return [*messages, *([_images_message(images)] if images else [])], sources


def _images_message(urls):
    """The images of a step's outputs as the user message that follows them."""
    return {"role": "user", "content": [{"type": "image_url", "image_url": {"url": url}} for url in urls]}


def _chat_name(call):
    """A function call's name as the upstream knows it (see _chat_tools)."""
    return f"{call['namespace']}__{call['name']}" if call.get("namespace") else call["name"]


def _chat_content(item):
    content = item["content"]
    if isinstance(content, str):
        return content
    if item["role"] == "assistant":
        return "".join(part["text"] for part in content)
    return [
        {"type": "image_url", "image_url": {"url": part["image_url"]}}
        if part["type"] == "input_image"
        else {"type": "text", "text": part["text"]}
        for part in content
    ]


def _chat_tools(tools):
    """(the function tools as chat tools, where each was in `tools`, the hosted tools left out by name or type,
    {chat name: (namespace, name)} of the functions a namespace groups). A namespace's functions go upstream as
    `<namespace>__<name>`, since Chat Completions has no namespaces. A malformed tool is a ValidationError naming it;
    a function tool is never left out."""
    if tools is None:
        return [], [], [], {}
    if not isinstance(tools, list):
        raise ValidationError({"tools": "must be a list of tools"})
    chat, places, left_out, namespaced = [], [], [], {}
    for index, tool in enumerate(tools):
        where = f"tools[{index}]"
        _check_tool(tool, where)
        if tool["type"] == "function":
            chat.append(_chat_function(tool, where))
            places.append(where)
        elif tool["type"] == "namespace" and isinstance(tool.get("tools"), list):
            namespace = tool.get("name")
            if not isinstance(namespace, str) or not TOOL_NAME_PATTERN.match(namespace):
                raise ValidationError({f"{where}.name": "must be 1 to 64 letters, digits, underscores or hyphens"})
            for number, inner in enumerate(tool["tools"]):
                inner_where = f"{where}.tools[{number}]"
                _check_tool(inner, inner_where)
                if inner["type"] != "function":
                    left_out.append(f"{namespace}.{inner.get('name') or inner['type']}")
                    continue
                function = _chat_function(inner, inner_where, namespace)
                chat.append(function)
                places.append(inner_where)
                namespaced[function["function"]["name"]] = (namespace, inner["name"])
        else:
            left_out.append(tool.get("name") or tool.get("server_label") or tool["type"])
    return chat, places, left_out, namespaced


def _check_tool(tool, where):
    if not isinstance(tool, dict) or not isinstance(tool.get("type"), str):
        raise ValidationError({where: 'must be a tool object with a "type"'})


def _chat_function(tool, where, namespace=None):
    """A function tool as a chat tool; named `<namespace>__<name>` when a namespace groups it."""
    name = tool.get("name")
    if not isinstance(name, str) or not TOOL_NAME_PATTERN.match(name):
        raise ValidationError({f"{where}.name": "must be 1 to 64 letters, digits, underscores or hyphens"})
    if namespace is not None:
        name = f"{namespace}__{name}"
        if not TOOL_NAME_PATTERN.match(name):
            raise ValidationError({f"{where}.name": "with its namespace, must be at most 62 characters together"})
    function = {"name": name}
    for key, kind, what in (
        ("description", str, "a string"),
        ("parameters", dict, "a JSON Schema object"),
        ("strict", bool, "true or false"),
    ):
        if tool.get(key) is None:
            continue
        if not isinstance(tool[key], kind):
            raise ValidationError({f"{where}.{key}": f"must be {what}"})
        function[key] = tool[key]
    return {"type": "function", "function": function}


def _settings(body):
    """The fields sent upstream besides the conversation and the tools, in Chat Completions' names."""
    settings = {}
    for key, kinds in SAMPLING.items():
        if body.get(key) is not None:
            if isinstance(body[key], bool) or not isinstance(body[key], kinds):
                raise ValidationError({key: "must be a number"})
            settings[key] = body[key]
    tokens = body.get("max_output_tokens")
    if tokens is not None:
        if isinstance(tokens, bool) or not isinstance(tokens, int) or tokens < 1:
            raise ValidationError({"max_output_tokens": "must be a whole number of at least 1"})
        settings["max_tokens"] = tokens
    parallel = body.get("parallel_tool_calls")
    if parallel is not None:
        if not isinstance(parallel, bool):
            raise ValidationError({"parallel_tool_calls": "must be true or false"})
        settings["parallel_tool_calls"] = parallel
    text = body.get("text") or {}
    if not isinstance(text, dict):
        raise ValidationError({"text": "must be an object"})
    response_format = _response_format(text.get("format"))
    if response_format is not None:
        settings["response_format"] = response_format
    choice = body.get("tool_choice")
    if choice is None or choice in TOOL_CHOICES:
        return {**settings, **({"tool_choice": choice} if choice is not None else {})}
    if isinstance(choice, dict) and choice.get("type") == "function" and isinstance(choice.get("name"), str):
        return {**settings, "tool_choice": {"type": "function", "function": {"name": choice["name"]}}}
    raise ValidationError({"tool_choice": 'must be auto, none, required or {"type": "function", "name": …}'})


def _response_format(text_format):
    """text.format (structured outputs) as Chat Completions' response_format; None for plain text."""
    if text_format is None or (isinstance(text_format, dict) and text_format.get("type") == "text"):
        return None
    if isinstance(text_format, dict) and text_format.get("type") == "json_object":
        return {"type": "json_object"}
    if (
        isinstance(text_format, dict)
        and text_format.get("type") == "json_schema"
        and isinstance(text_format.get("name"), str)
        and isinstance(text_format.get("schema"), dict)
    ):
        keys = ("name", "schema", "strict", "description")
        return {"type": "json_schema", "json_schema": {key: text_format[key] for key in keys if key in text_format}}
    raise ValidationError({"text.format": 'must be {"type": "text"}, {"type": "json_object"} or a json_schema format'})


def _named_as_sent(error, tool_places, fields):
    """A ValidationError of the chat body, naming the field as the client sent it: `tool_places` where each function
    tool was in its tools, `fields` the client's field of each call's and output's id."""
    named = {}
    for where, message in error.errors.items():
        found = re.match(r"tools\[(\d+)\]\.function\.(.*)", where)
        if found:
            where = f"{tool_places[int(found.group(1))]}.{found.group(2)}"
        elif where in fields:
            where = fields[where]
        elif where.startswith("messages"):
            where = "input"
        named[where] = message
    return ValidationError(named)


class _Output:
    """The response as its pieces arrive: the events each piece brings, and the output items so far."""

    def __init__(self, request):
        self.request = request
        self.hex = request.response_id.removeprefix("resp_")
        self.items = []
        self.head = None
        self.message = None  # the message item being written, while text arrives

    def start(self, piece):
        self.head = {
            "id": self.request.response_id,
            "object": "response",
            "created_at": piece.created or int(time.time()),
            "model": piece.model or self.request.model,
            "error": None,
            "incomplete_details": None,
            **self.request.echo,
            "usage": None,
        }
        yield {"type": "response.created", "response": self.response("in_progress")}
        yield {"type": "response.in_progress", "response": self.response("in_progress")}

    def text(self, text):
        if self.message is None:
            index = len(self.items)
            self.message = {"id": f"msg_{self.hex}_{index}", "type": "message", "role": "assistant", "text": ""}
            item = {**self._message_item("in_progress"), "content": []}
            yield {"type": "response.output_item.added", "output_index": index, "item": item}
            yield {**self._part_event("response.content_part.added"), "part": self._part("")}
        self.message["text"] += text
        yield {**self._part_event("response.output_text.delta"), "delta": text, "logprobs": []}

    def call(self, piece):
        yield from self.close_message()
        index = len(self.items)
        namespace, name = self.request.namespaced.get(piece.name, (None, piece.name))
        item = {
            "id": f"fc_{self.hex}_{index}",
            "type": "function_call",
            "status": "in_progress",
            "call_id": piece.id,
            "name": name,
            "arguments": "",
            **({"namespace": namespace} if namespace else {}),
        }
        yield {"type": "response.output_item.added", "output_index": index, "item": item}
        where = {"item_id": item["id"], "output_index": index}
        yield {"type": "response.function_call_arguments.delta", **where, "delta": piece.arguments}
        yield {
            "type": "response.function_call_arguments.done",
            **where,
            "name": name,
            "arguments": piece.arguments,
        }
        self.items.append({**item, "status": "completed", "arguments": piece.arguments})
        yield {"type": "response.output_item.done", "output_index": index, "item": self.items[-1]}

    def close_message(self):
        if self.message is None:
            return
        text = self.message["text"]
        yield {**self._part_event("response.output_text.done"), "text": text, "logprobs": []}
        yield {**self._part_event("response.content_part.done"), "part": self._part(text)}
        self.items.append(self._message_item("completed", [self._part(text)]))
        self.message = None
        yield {"type": "response.output_item.done", "output_index": len(self.items) - 1, "item": self.items[-1]}

    def end(self, piece):
        if not self.items and self.message is None:  # an empty answer is an empty message, not no output at all
            yield from self.text("")
        yield from self.close_message()
        reason = INCOMPLETE.get(piece.finish_reason)
        status = "incomplete" if reason else "completed"
        response = self.response(status, usage=_usage(piece.usage))
        if reason:
            response["incomplete_details"] = {"reason": reason}
        yield {"type": f"response.{status}", "response": response}

    def failed(self, piece):
        """The upstream failed mid-stream: the response fails with the error, as OpenAI's do, the text the client
        already read kept as an incomplete message."""
        if self.message is not None:
            self.items.append(self._message_item("incomplete", [self._part(self.message["text"])]))
            self.message = None
        error = {"code": FAILED.get(piece.status, "server_error"), "message": piece.message}
        yield {"type": "response.failed", "response": self.response("failed", error=error)}

    def response(self, status, **fields_):
        return {**self.head, "status": status, "output": list(self.items), **fields_}

    def _message_item(self, status, content=None):
        item = {"id": self.message["id"], "type": "message", "role": "assistant", "status": status}
        return {**item, "content": content or []}

    def _part_event(self, kind):
        return {"type": kind, "item_id": self.message["id"], "output_index": len(self.items), "content_index": 0}

    @staticmethod
    def _part(text):
        return {"type": "output_text", "text": text, "annotations": []}


def _usage(usage):
    """A chat completion's usage in the Responses API's names."""
    if not usage:
        return None
    cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0
    reasoning = (usage.get("completion_tokens_details") or {}).get("reasoning_tokens") or 0
    return {
        "input_tokens": usage.get("prompt_tokens") or 0,
        "input_tokens_details": {"cached_tokens": cached, "cache_write_tokens": 0},
        "output_tokens": usage.get("completion_tokens") or 0,
        "output_tokens_details": {"reasoning_tokens": reasoning},
        "total_tokens": usage.get("total_tokens") or 0,
    }


def response_events(pieces, request):
    """The Responses events of an answer's pieces, each with its sequence number; the last one (response.completed,
    response.incomplete, or response.failed when the upstream failed mid-stream) carries the whole response."""
    output = _Output(request)
    steps = {
        Start: output.start,
        Text: lambda piece: output.text(piece.text),
        Call: output.call,
        End: output.end,
        Failure: output.failed,
    }
    number = 0
    for piece in pieces:
        if isinstance(piece, KeepAlive):
            yield piece
            continue
        for event in steps[type(piece)](piece):
            yield {**event, "sequence_number": number}
            number += 1


def answer(exchange, request):
    """The response object of the exchange's answer: the one its stream ends with."""
    *_, last = response_events(pieces_of(exchange.completion), request)
    return last["response"]


def stream(pieces, request):
    yield from server_sent_events(response_events(pieces, request), named=True)


def kept(exchange, request):
    """What to keep of an answered response so a later request can continue it ({"id", "response", "input"}), or
    None when the request said `store: false` or nothing was answered."""
    if not request.store or exchange.completion is None:
        return None
    return {"id": request.response_id, "response": answer(exchange, request), "input": list(request.items)}


def error_body(status, message, error_type=None, code=None, param=None):
    """OpenAI's error shape: the Responses API's is Chat Completions'."""
    return chat_completions.error_body(status, message, error_type, code, param)
