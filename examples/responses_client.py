"""examples/proxy_client.py's app, speaking OpenAI's Responses API (`client.responses`), as the OpenAI Agents SDK,
the Vercel AI SDK, Pydantic AI and Codex CLI do by default. Against OpenAI it would differ in the same two lines: the
base URL and the key.

Start Toolgate with `make run` in one terminal, then, in another:

    .venv/bin/python examples/responses_client.py

The demo agent `browser_canvas` restricts `place_block` to one call per response; its model first places two blocks
at once, and this script only ever gets one placement at a time. After its first request it sends only what is new,
its results, with `previous_response_id`: Toolgate kept the responses it answered, so the conversation goes on as
one run. Set TOOLGATE_URL for another address, TOOLGATE_API_TOKEN when the login is on.
"""

import json
import os
import uuid

from openai import OpenAI

TOOLGATE_URL = os.environ.get("TOOLGATE_URL", "http://127.0.0.1:5000").rstrip("/")
AGENT_ID = "browser_canvas"

client = OpenAI(
    base_url=f"{TOOLGATE_URL}/proxy/{AGENT_ID}/v1",  # was: the provider's base URL
    api_key=os.environ.get("TOOLGATE_API_TOKEN", "unused on 127.0.0.1"),  # was: the provider's key
)

TOOLS = [
    {
        "type": "function",
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
    }
]
page = []  # the blocks this "browser" has placed, in order


def place_block(block, below=None):
    """The tool this app runs itself: Toolgate never sees it run, only its result in the next request."""
    block_id = f"{block}-{uuid.uuid4().hex[:6]}"
    page.append({"id": block_id, "block": block, "below": below})
    return block_id


def main():
    new_items = "Build a landing page with a hero and a text below it."
    previous_id = None
    while True:
        raw = client.responses.with_raw_response.create(
            model="any", input=new_items, tools=TOOLS, previous_response_id=previous_id
        )
        run_id = raw.headers.get("X-Toolgate-Run")
        response = raw.parse()
        calls = [item for item in response.output if item.type == "function_call"]
        if not calls:
            break
        print(f"The model asks for {len(calls)} call(s):")
        new_items = []
        for call in calls:
            result = place_block(**json.loads(call.arguments))
            print(f"  place_block({call.arguments}) -> {result}")
            new_items.append({"type": "function_call_output", "call_id": call.call_id, "output": result})
        previous_id = response.id
    print(f"Answer: {response.output_text}")
    print(f"Page: {' > '.join(entry['id'] for entry in page)}")
    print(f"The whole conversation, with what the proxy kept from this script: {TOOLGATE_URL}/runs/{run_id}")


if __name__ == "__main__":
    main()
