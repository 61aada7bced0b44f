"""`relay reply <relay-id> <text>`: how an agent that cannot send natively (Codex)
answers the operator.

This is the one write that needs no y/N: it goes only into the operator's own
inbox, and only as an answer to a relay id that inbox's operator sent (checked
in the shared ledger), so a peer cannot use it to reach anyone else or to
start a new exchange. The reply carries hop + 1, stops at the cap, and names the id it answers in
its `re=` header, which is how the operator's session links it (never by body).
"""

from __future__ import annotations

from relay_repl.core.envelope import Envelope
from relay_repl.core.errors import DiscoveryError, LoopHalt, RelayError
from relay_repl.core.target import Me
from relay_repl.session.inbox import find_inbox, user_frame
from relay_repl.system.wire import send_frames
from relay_repl.store.ledger import Ledger
from relay_repl.session.whoami import own_address


def reply(relay_id: str, text: str, *, ledger: Ledger | None = None, me: Me | None = None) -> tuple[Envelope, str]:
    """Answer `relay_id` into its operator's inbox; `me` is who answers (default: this process's own address)."""
    ledger = ledger or Ledger.default()
    hop = ledger.sent_hop(relay_id)
    if hop is None:
        raise DiscoveryError(
            f"relay id {relay_id!r} was not sent by the operator here: `relay reply` only answers ids from the "
            "envelope you received (copy id=... exactly)"
        )
    halt = ledger.active_halt()
    if halt:
        raise LoopHalt(f"relay-halt is in force ({halt.reason}): not replying")
    try:
        inbox = find_inbox(relay_id)
    except RelayError as exc:
        raise type(exc)(f"{exc}{_sandbox_hint()}") from None
    me = me or own_address()
    env = Envelope.make(
        sender=me.sender,
        to="operator",
        id=ledger.next_id(me.address),
        hop=hop,
        want="none",
        re=relay_id,
        body=text,
    ).next_hop()
    line = env.compose()
    send_frames(inbox.socket, [user_frame(line, f"relay-reply:{me.address}")])
    ledger.record_sent(env.id, env.hop, f"inbox:{inbox.pid}")
    ledger.event("reply", relay_id=env.id, data={"answers": relay_id, "inbox": inbox.socket, "line": line})
    return env, inbox.socket


def _sandbox_hint() -> str:
    """Inside an agent's sandbox the inbox may be out of reach: the kind whose sandbox this is says
    which routes still work instead (`AgentKind.discovery.sandbox_note`)."""
    import os

    from relay_repl.agents import registry

    notes = [n for k in registry.kinds() if (n := k.discovery.sandbox_note(os.environ))]
    return "".join(f"; {n}" for n in notes)
