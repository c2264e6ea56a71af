"""An app that builds a page with a tool it runs itself, talking to a Toolgate agent through its policy proxy with
Anthropic's `anthropic` SDK, as it would talk to Claude. Against Anthropic's API it would differ in two lines: the
base URL and the key. The agent's own model answers, whichever API the app speaks.

Start Toolgate with `make run` in one terminal, then, in another:

    .venv/bin/python examples/anthropic_client.py

The demo agent `browser_canvas` restricts `place_block` to one call per response. Its model first places two
blocks at once; the proxy rejects that response before this script sees it, asks again, and this script only ever
gets one tool_use at a time. The conversation, with the round this script never saw, is on the runs page.
Set TOOLGATE_URL for another address, TOOLGATE_API_TOKEN when the login is on.
"""

import json
import os
import uuid

from anthropic import Anthropic

TOOLGATE_URL = os.environ.get("TOOLGATE_URL", "http://127.0.0.1:5000").rstrip("/")
AGENT_ID = "browser_canvas"

client = Anthropic(
    base_url=f"{TOOLGATE_URL}/proxy/{AGENT_ID}",  # was: Anthropic's (the SDK adds /v1/messages)
    api_key=os.environ.get("TOOLGATE_API_TOKEN", "unused on 127.0.0.1"),  # was: your Anthropic key
)

TOOLS = [
    {
        "name": "place_block",
        "description": "Place a block on the page and return its id.",
        "input_schema": {
            "type": "object",
            "properties": {
                "block": {"type": "string", "enum": ["hero", "text", "image", "button"]},
                "below": {"type": "string", "description": "The id of the block to place it below."},
            },
            "required": ["block"],
        },
    }
]
page = []  # the blocks this "browser" has placed, in order


def place_block(block, below=None):
    """The tool this app runs itself: Toolgate never sees it run, only its result in the next request."""
    block_id = f"{block}-{uuid.uuid4().hex[:6]}"
    page.append({"id": block_id, "block": block, "below": below})
    return block_id


def main():
    messages = [{"role": "user", "content": "Build a landing page with a hero and a text below it."}]
    while True:
        raw = client.messages.with_raw_response.create(model="any", max_tokens=1024, messages=messages, tools=TOOLS)
        run_id = raw.headers.get("X-Toolgate-Run")
        message = raw.parse()
        messages.append({"role": "assistant", "content": message.content})
        calls = [block for block in message.content if block.type == "tool_use"]
        if not calls:
            break
        print(f"The model asks for {len(calls)} call(s):")
        results = []
        for call in calls:
            result = place_block(**call.input)
            print(f"  place_block({json.dumps(call.input)}) -> {result}")
            results.append({"type": "tool_result", "tool_use_id": call.id, "content": result})
        messages.append({"role": "user", "content": results})
    print(f"Answer: {''.join(block.text for block in message.content if block.type == 'text')}")
    print(f"Page: {' > '.join(entry['id'] for entry in page)}")
    print(f"The whole conversation, with what the proxy kept from this script: {TOOLGATE_URL}/runs/{run_id}")


if __name__ == "__main__":
    main()
