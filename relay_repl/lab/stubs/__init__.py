"""Stub model servers for the offline lab.

One process serves a control API on a UNIX socket and, per lab session, a loopback TCP
port speaking the Anthropic Messages API (Claude Code), the OpenAI Responses API (Codex) or
the Gemini API (`google`: Gemini CLI), answering from a per-session script. Run it with
`python -m relay_repl.lab.stubs --control /abs/stub-control.sock [--ready-file stubs.json]`
and drive it with `relay_repl.lab.stubs.client`.
"""

from relay_repl.lab.stubs.script import LastInput, Reply, Rule, Script, ScriptState, Step, ToolCall

__all__ = ["LastInput", "Reply", "Rule", "Script", "ScriptState", "Step", "ToolCall"]
