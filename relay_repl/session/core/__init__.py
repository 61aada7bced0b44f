"""The session's core: its parts with one job each, and what every other part of the session stands on.

Finding targets (finder), the one gate (gate, gating), the send pipeline (send_request, sendoptions,
sending, hooks), the inbox and answers (inbox, inbox_find, answers, turn_replies, reply, whoami),
agents' requests (asking, requests), the operator's own gated actions (actions), and what the
commands read (dead, unfinished, doctor, verify, follow, watch, watch_view, hints). It imports
nothing of runs/, remote/, mcp/ or the facade above it (pyproject: contract "session-parts"): what
it needs from them is handed in, e.g. `Sender` gets its sends to other hosts from the `Session`.
"""
