"""`relay reply <relay-id> <text>`: how an agent that cannot send natively (Codex)
answers the operator.

This is the one write that needs no y/N: it goes only into the operator's own
inbox, and only as an answer to a relay id that inbox's operator sent (checked
in the shared ledger), so a peer cannot use it to reach anyone else or to
start a new exchange. The reply carries hop + 1, stops at the cap, and names the id it answers in
its `re=` header, which is how the operator's session links it (never by body).

Why it imports so little (issue 33): each answer a Codex agent gives this way is one process
start, and importing pydantic for the envelope, the inbox record and the agents package was most
of its 0.22-0.39 CPU-s. The reply's line is composed by `plain_line` (core/envelope_line.py) when
every field is plainly valid, the inbox is found from its plain records (session/core/inbox_find.py)
and who answers from each kind's standard-library rule (`whoami.own_sender`); anything else
(a body with a tab, a Claude session answering, an odd record, the hop cap) takes the model's
path, whose refusals are the ones it always gave. tests/frontends/test_reply_cold.py pins what it
loads.
"""

from __future__ import annotations


from typing import TYPE_CHECKING, Any, NamedTuple

from relay_repl.core.envelope_line import HOP_CAP, plain_line
from relay_repl.core.errors import DiscoveryError, LoopHalt, RelayError
from relay_repl.session.core.inbox_find import choose, plain_records, user_frame
from relay_repl.store.ledger import Ledger
from relay_repl.system.wire import send_frames

if TYPE_CHECKING:
    from relay_repl.core.target import Me
    from relay_repl.session.core.whoami import OwnAddress


class Replied(NamedTuple):
    """The reply as sent: its id, hop and exact line (what `Envelope.compose()` gives for it)."""

    id: str
    hop: int
    line: str

    def compose(self) -> str:
        return self.line


def reply(relay_id: str, text: str, *, ledger: Ledger | None = None,
          me: Me | OwnAddress | None = None) -> tuple[Replied, str]:
    """Answer `relay_id` into its operator's inbox; `me` is who answers (default: this process's own address)."""
    if ledger is None:  # an id the operator did not send is refused before any file is made or touched
        peek = Ledger.read_only_default()
        try:
            known = peek.sent_hop(relay_id)
        finally:
            peek.close()
        if known is None:
            raise _not_ours(relay_id)
        ledger = Ledger.default()
    hop = ledger.sent_hop(relay_id)
    if hop is None:
        raise _not_ours(relay_id)
    halt = ledger.active_halt()
    if halt:
        raise LoopHalt(f"relay-halt is in force ({halt.reason}): not replying")
    try:
        inbox = find_inbox(relay_id)
    except RelayError as exc:
        raise type(exc)(f"{exc}{_sandbox_hint()}") from None
    if me is None:
        from relay_repl.session.core.whoami import own_sender

        me = own_sender()
    rid = ledger.next_id(me.address)
    line = (plain_line(sender=me.sender, to="operator", id=rid, hop=hop + 1, want="none", re=relay_id, body=text)
            if type(hop) is int and 0 <= hop < HOP_CAP else None)
    if line is None:  # the model decides, and its refusal (hop cap, a control character, ...) is the word
        from relay_repl.core.envelope import Envelope

        env = Envelope.make(sender=me.sender, to="operator", id=rid, hop=hop, want="none", re=relay_id,
                            body=text).next_hop()
        sent = Replied(env.id, env.hop, env.compose())
    else:
        sent = Replied(rid, hop + 1, line)
    send_frames(inbox.socket, [user_frame(sent.line, f"relay-reply:{me.address}")])
    ledger.record_sent(sent.id, sent.hop, f"inbox:{inbox.pid}")
    ledger.event("reply", relay_id=sent.id, data={"answers": relay_id, "inbox": inbox.socket, "line": sent.line})
    return sent, inbox.socket


def _not_ours(relay_id: str) -> DiscoveryError:
    return DiscoveryError(
        f"relay id {relay_id!r} was not sent by the operator here: `relay reply` only answers ids from the "
        "envelope you received (copy id=... exactly)"
    )


def find_inbox(relay_id: str | None = None) -> Any:
    """`inbox.find_inbox(relay_id)`: from the plain records when every one is plain, else through
    the `InboxRecord` model. Either answer has `pid`, `address` and `socket`."""
    records = plain_records()
    if records is None:
        from relay_repl.session.core.inbox import find_inbox as by_model

        return by_model(relay_id)
    return choose([r for r in records if r.live], relay_id)


def _sandbox_hint() -> str:
    """Inside an agent's sandbox the inbox may be out of reach: the kind whose sandbox this is says
    which routes still work instead (`AgentKind.discovery.sandbox_note`)."""
    import os

    from relay_repl.agents import registry

    notes = [n for k in registry.kinds() if (n := k.discovery.sandbox_note(os.environ))]
    return "".join(f"; {n}" for n in notes)
