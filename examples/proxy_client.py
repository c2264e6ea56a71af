"""An app that builds a page with a tool it runs itself, talking to a Toolgate agent through its policy proxy with the
`openai` SDK. Against an OpenAI model it would differ in two lines: the base URL and the key.

Start Toolgate with `make run` in one terminal, then, in another:

    .venv/bin/python examples/proxy_client.py

The demo agent `browser_canvas` restricts `place_block` to one call per response. Its model first places two
blocks at once; the proxy rejects that response before this script sees it, asks again, and this script only ever
gets one placement at a time. The conversation, with the round this script never saw, is on the runs page.
Set TOOLGATE_URL for another address, TOOLGATE_API_TOKEN when the login is on.
"""

import json
import os
import sys
import uuid

from openai import APIConnectionError, OpenAI

TOOLGATE_URL = os.environ.get("TOOLGATE_URL", "http://127.0.0.1:5000").rstrip("/")
AGENT_ID = "browser_canvas"

client = OpenAI(
    base_url=f"{TOOLGATE_URL}/proxy/{AGENT_ID}/v1",  # was: the provider's base URL
    api_key=os.environ.get("TOOLGATE_API_TOKEN", "unused on 127.0.0.1"),  # was: the provider's key
)

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "place_block",
            "description": "Place a block on the page and return its id.",
            "parameters": {
                "type": "object",
                "properties": {
                    "block": {"type": "string", "enum": ["hero", "text", "image", "button"]},
                    "below": {"type": "string", "description": "The id of the block to place it below."},
                },
                "required": ["block"],
            },
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
        raw = client.chat.completions.with_raw_response.create(model="any", messages=messages, tools=TOOLS)
        run_id = raw.headers.get("X-Toolgate-Run")
        message = raw.parse().choices[0].message
        messages.append(message.model_dump(exclude_none=True))
        if not message.tool_calls:
            break
        print(f"The model asks for {len(message.tool_calls)} call(s):")
        for call in message.tool_calls:
            arguments = json.loads(call.function.arguments)
            result = place_block(**arguments)
            print(f"  place_block({call.function.arguments}) -> {result}")
            messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
    print(f"Answer: {message.content}")
    print(f"Page: {' > '.join(entry['id'] for entry in page)}")
    print(f"The whole conversation, with what the proxy kept from this script: {TOOLGATE_URL}/runs/{run_id}")


if __name__ == "__main__":
    try:
        main()
    except APIConnectionError:
        sys.exit(
            f"Cannot reach Toolgate at {TOOLGATE_URL}. Start it with `make run`, or, if it runs elsewhere, set "
            "TOOLGATE_URL to its address: TOOLGATE_URL=http://127.0.0.1:8000 .venv/bin/python examples/proxy_client.py"
        )
