"""An OpenAI-compatible chat-completions server on asyncio, for load: one coroutine per connection, so it holds a
thousand connections at once where a thread-per-request server would hold a few dozen. HTTP/1.1 with keep-alive,
as model servers speak it.

Every answer is one call of the tool `place_components` (so a proxy's policy has something to check), after
`delay` seconds; a model whose name starts with "stream" answers with text instead, written as `chunks`
server-sent events spread over `stream_seconds` when the request asks for a stream, or in one piece after those
seconds when it does not (the model takes as long to write it either way); the model "instant" answers at once.
`held()` makes every request wait until `release()`, so a test knows how many it holds.

Served in a thread (`running(...)`), or in a process of its own: `python -m tests.async_model_server [--delay S]`
prints "Serving on <url>" like waitress.
"""

import argparse
import asyncio
import json
import threading
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

PATH = b"/v1/chat/completions"
TOOL_CALL = {
    "id": "call_1",
    "type": "function",
    "function": {"name": "place_components", "arguments": '{"component": "hero"}'},
}
USAGE = {"prompt_tokens": 40, "completion_tokens": 12, "total_tokens": 52}


def _completion(model, message, finish_reason):
    return {
        "id": "chatcmpl-async",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
        "usage": USAGE,
    }


def _chunk(model, delta, finish_reason=None):
    choice = {"index": 0, "delta": delta, "finish_reason": finish_reason}
    body = {"id": "chatcmpl-async", "object": "chat.completion.chunk", "created": 0, "model": model}
    return b"data: " + json.dumps({**body, "choices": [choice]}).encode() + b"\n\n"


def _http_chunk(data):
    return b"%x\r\n%s\r\n" % (len(data), data)


class AsyncModelServer:
    def __init__(self, delay=1.0, chunks=40, stream_seconds=2.0):
        self.delay = delay
        self.chunks = chunks
        self.stream_seconds = stream_seconds
        self.arrived = 0  # chat-completions requests read, answered or not
        self._release = None  # an asyncio.Event while requests are held
        self._loop = None

    def held(self):
        """From now on every request waits for release() before its delay starts."""
        self._release = asyncio.Event()
        return self

    def release(self):
        self._loop.call_soon_threadsafe(self._release.set)

    async def start(self, port=0):
        self._loop = asyncio.get_running_loop()
        server = await asyncio.start_server(self._connection, "127.0.0.1", port, backlog=4096, limit=2**20)
        return server, f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"

    async def _connection(self, reader, writer):
        try:
            while await self._exchange(reader, writer):
                pass
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError, asyncio.CancelledError):
            pass  # the client went away or sent what no client would, or the server closes: the connection ends
        finally:
            writer.close()

    async def _exchange(self, reader, writer):
        """Read one request and answer it; whether the connection stays open."""
        head = await reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        method, path = lines[0].split(" ")[:2]
        headers = dict(line.lower().split(": ", 1) for line in lines[1:] if ": " in line)
        body = await reader.readexactly(int(headers.get("content-length", 0)))
        keep = headers.get("connection") != "close"
        if method == "POST" and path.encode() == PATH:
            self.arrived += 1
            if self._release is not None:
                await self._release.wait()
            request = json.loads(body)
            model = request.get("model", "")
            if model.startswith("stream") and request.get("stream"):
                await self._stream(writer, model)
                return keep
            text = model.startswith("stream")
            await asyncio.sleep(0 if model == "instant" else self.stream_seconds if text else self.delay)
            message = {"role": "assistant", "content": "word " * self.chunks if text else None}
            if not text:
                message["tool_calls"] = [TOOL_CALL]
            answer = _completion(model, message, "stop" if text else "tool_calls")
            await self._send(writer, 200, "application/json", json.dumps(answer).encode(), keep)
        elif method == "GET":
            await self._send(writer, 200, "application/json", b'{"object": "list", "data": []}', keep)
        else:
            await self._send(writer, 404, "application/json", b'{"error": {"message": "Not found"}}', keep)
        return keep

    @staticmethod
    async def _send(writer, status, content_type, data, keep):
        head = f"HTTP/1.1 {status} X\r\nContent-Type: {content_type}\r\nContent-Length: {len(data)}\r\n"
        writer.write(head.encode() + (b"" if keep else b"Connection: close\r\n") + b"\r\n" + data)
        await writer.drain()

    async def _stream(self, writer, model):
        head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
        writer.write(head + _http_chunk(_chunk(model, {"role": "assistant", "content": ""})))
        for _ in range(self.chunks):
            await asyncio.sleep(self.stream_seconds / self.chunks)
            writer.write(_http_chunk(_chunk(model, {"content": "word "})))
            await writer.drain()
        writer.write(_http_chunk(_chunk(model, {}, "stop")) + _http_chunk(b"data: [DONE]\n\n") + _http_chunk(b""))
        await writer.drain()


@contextmanager
def running(model_server):
    """Serve `model_server` from a thread of its own until the block ends; yields its base URL (no /v1). At the end
    the connections still open are cancelled, held requests included."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    server, url = asyncio.run_coroutine_threadsafe(model_server.start(), loop).result(timeout=10)
    try:
        yield url
    finally:
        asyncio.run_coroutine_threadsafe(_close(server), loop).result(timeout=10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=5)
        loop.close()


async def _close(server):
    server.close()
    others = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
    for task in others:
        task.cancel()
    await asyncio.gather(*others, return_exceptions=True)


async def _serve_forever(model_server):
    server, url = await model_server.start()
    print(f"Serving on {url}", flush=True)
    async with server:
        await server.serve_forever()


@contextmanager
def held_and_running():
    """A model server answering at once, but only after release(): every request it takes waits for it, so a test
    knows how many it holds (`arrived`). Served as running() serves it; its base URL is `url`."""
    model = AsyncModelServer(delay=0).held()
    with running(model) as url:
        model.url = url
        yield model


def run_in_a_thread(coroutine):
    """asyncio.run in a thread of its own: Playwright's sync API keeps an event loop running in the test's thread
    once an end-to-end test has used it."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--delay", type=float, default=1.0)
    asyncio.run(_serve_forever(AsyncModelServer(parser.parse_args().delay)))
