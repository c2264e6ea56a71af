"""The policy proxy (SPEC §8): a client's request answered under the agent's policy, whatever API it speaks.

- `request`: what a client sends, as the canonical conversation (chat-format messages and tools) and where the
  client's current turn starts in it; the Chat Completions body is read here.
- `turn`: the client's turn: where it starts, what happened in it, whether a request continues an earlier run.
- `core`: the exchange — ask upstream, put each response through the round (engine.round), hide rejected rounds and
  ask again, hand the client a compliant answer (a chat completion).
- `chat_completions`, `responses`: the APIs the proxy speaks, one module each (read, answer, stream, error shape,
  what to keep): Chat Completions is the canonical form; the Responses API is translated into it and back.
- `stream`: the pieces an answer streams as, whatever API streams them.
- `upstream`: the agent's provider as the proxy's upstream.
- `client_tools`: the tools a client runs, as the gate sees them.
- `recording`: proxied conversations as runs; `serve`: one request answered and recorded, the one sequence every
  caller runs; `replay`: a proxied run played again as its client, for regression cases.
"""
