"""Finding the operator's running inbox from another process (`relay reply`, `relay ask`), and the
frame written to it, without the inbox's listener module.

Why apart from session/core/inbox.py: `relay reply` is one process start per answer a Codex agent
gives, and session/core/inbox.py imports pydantic, the envelope and plan models and the approval
gate, none of which finding a socket needs (issue 33). The records are read here as plain JSON and
checked strictly; a record that is not exactly the shape the inbox writes (or any file that does
not parse) sends the caller to the `InboxRecord` model's reader (`inbox.find_inbox`, as
`session.reply.find_inbox` does), so a record either reader keeps, the other keeps alike, and
nothing is decided on looser evidence. The choice between records (`choose`) is the one rule both use."""

from __future__ import annotations

import json
import os
from typing import Any, NamedTuple

from relay_repl.core.errors import DiscoveryError
from relay_repl.store.paths import state_dir
from relay_repl.system.proc import same_process


class InboxAt(NamedTuple):
    """What a sender needs of one running inbox's record: whose it is and where it listens."""

    pid: int
    proc_start: str
    address: str
    socket: str

    @property
    def live(self) -> bool:
        return same_process(self.pid, self.proc_start)[0]  # the one liveness rule: a zombie is dead


def choose(live: list[Any], relay_id: str | None = None) -> Any:
    """The live inbox a reply should go to: the one whose address prefixes the relay id, else the
    only live one. Refuses to guess between several. `live` holds records with `address`."""
    if relay_id:
        owners = [r for r in live if relay_id.startswith(r.address + "-")]
        if len(owners) == 1:
            return owners[0]
    if len(live) == 1:
        return live[0]
    if not live:
        raise DiscoveryError(f"no relay REPL inbox is running under {state_dir(create=False)}; start `relay` (or set RELAY_HOME to the operator's)")
    raise DiscoveryError(
        f"{len(live)} relay inboxes are running and none owns {relay_id!r}: pass the relay id you are answering"
    )


def plain_records() -> list[InboxAt] | None:
    """Every inbox record on disk (in name order, as `read_records` lists them), or None when one
    is not plainly the shape `InboxRecord` accepts: then the model decides about all of them."""
    d = state_dir(create=False) / "inbox"
    try:
        names = sorted(n for n in os.listdir(d) if n.endswith(".json"))
    except FileNotFoundError:
        return []
    except OSError:
        return None
    out: list[InboxAt] = []
    for name in names:
        try:
            with open(d / name, "rb") as f:
                raw = f.read()
        except OSError:
            continue  # the model's reader skips it alike (gone, or unreadable)
        rec = _plain(raw)
        if rec is None:
            return None
        out.append(rec)
    return out


def _reject(constant: str) -> None:
    raise ValueError(constant)


def _plain(raw: bytes) -> InboxAt | None:
    try:
        d = json.loads(raw, parse_constant=_reject)
    except ValueError:
        return None
    if not isinstance(d, dict):
        return None
    if not (_int(d.get("pid")) and all(isinstance(d.get(k), str) for k in ("proc_start", "address", "sender", "socket"))
            and _number(d.get("started"))):
        return None
    for k in ("extra_sockets", "owned_files"):
        if k in d and not (isinstance(d[k], list) and all(isinstance(x, str) for x in d[k])):
            return None
    stamps = d.get("stamps", {})
    if not isinstance(stamps, dict) or not all(_stamp(s) for s in stamps.values()):
        return None
    return InboxAt(d["pid"], d["proc_start"], d["address"], d["socket"])


def _int(v: object) -> bool:
    return type(v) is int


def _number(v: object) -> bool:
    return type(v) in (int, float)


def _stamp(s: object) -> bool:
    return (isinstance(s, dict) and all(_int(s.get(k)) for k in ("dev", "ino", "ctime_ns"))
            and (s.get("sha256") is None or isinstance(s.get("sha256"), str)))


def user_frame(text: str, sender_tag: str) -> dict[str, Any]:
    """One line into an inbox, in the Claude inbox wire format (what the inbox reads)."""
    return {
        "type": "user",
        "message": {"role": "user", "content": text},
        "msg_id": _uuid4(),
        "from": sender_tag,
    }


def _uuid4() -> str:
    """`str(uuid.uuid4())` (RFC 9562 version 4, from os.urandom as uuid4 does) without importing
    `uuid`, which imports `platform` at its top: a tenth of `relay reply`'s imports."""
    b = bytearray(os.urandom(16))
    b[6] = (b[6] & 0x0F) | 0x40
    b[8] = (b[8] & 0x3F) | 0x80
    h = b.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
