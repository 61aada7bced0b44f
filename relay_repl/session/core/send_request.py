"""One message to send, as one value: what every way into a send hands the send pipeline.

Why a value: `send`, `reply`, `forward`, a chain's members, a send to another host, an agent's
request and the answer taken back to its asker each used to run their own copy of resolve →
halt check → route → choose → envelope, and a send's options changed shape on the way (keywords,
then `SendOptions`, then keywords again for a host). Now each builds a `SendRequest` and hands it
to `Sender.submit` (session/core/sending.py), the one pipeline: resolve → route → choose → plan → gate
→ run → confirm, with the hooks a run installs (session/core/hooks.py) seeing the request itself.

`origin` says whose words the body is and which entry point made it, because the pipeline's
steps differ by it and only by it: the operator's own send may be answered by a run's replay
stage (a resumed notebook or recipe); a reply's plan names no earlier sends; a forward carries
the pasted envelope on (its id, its sender, its want, hop + 1) and names its sender's words.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from relay_repl.core.envelope import Envelope
from relay_repl.core.target import Target
from relay_repl.session.core.sendoptions import SendOptions

Origin = Literal["operator", "reply", "forward", "request", "answer"]
"""Whose words, from which entry point: `operator` (session.send, a transport handle, a recipe or
notebook step, a host's serve), `reply` (session.reply: the operator's answer to an inbox message),
`forward` (a pasted envelope: its sender's words), `request` (an agent's held request, quoted as its
words), `answer` (the verified answer to a request, taken back to the asker, quoted)."""


class SendRequest(BaseModel):
    """One message into the send pipeline: target, body, the options of the send (want, transport,
    hop, ...: one `SendOptions`, end to end), whose words, and for a forward the envelope sent on."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True, extra="forbid")

    target: str | Target
    body: str
    options: SendOptions = SendOptions()
    origin: Origin = "operator"
    forwarded: Envelope | None = None

    @property
    def want(self) -> str:
        return self.forwarded.want if self.forwarded is not None else self.options.want

    @property
    def replayable(self) -> bool:
        """Answered by a run's replay stage (session/core/hooks.py `send`): the operator's own sends only, as
        a notebook cell or a recipe step makes them; a reply, a forward or an agent's request is not."""
        return self.origin == "operator"

    def with_options(self, **update: Any) -> SendRequest:
        """The same request with some options changed (a chain's member, a resumed run's relay id)."""
        return self.model_copy(update={"options": self.options.model_copy(update=update)})

    def to(self, target: str | Target) -> SendRequest:
        """The same request aimed at `target` (resolved: a Target in place of its spec)."""
        return self.model_copy(update={"target": target})
