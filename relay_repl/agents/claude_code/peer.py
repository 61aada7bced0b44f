"""List the operator's inbox as a Claude Code peer, so Claude sessions can
answer it natively (ListAgents shows it, SendMessage reaches it).

This writes into another program's registry, so it is planned and gated like
any send, and refused on a Claude version the record format was not verified
on (claude-code.md section 1.2: `claude agents --json` lists any same-uid
process that writes a well-formed record whose pid and procStart are live).

The listening socket is placed in the directory of a live Claude session's
own socket, taken from that session's registry record (never built): replies
and receipts are only written back to `from` addresses in the target's socket
directory (section 2.6).
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import time
import uuid
from pathlib import Path
from typing import Any

from relay_repl.agents.adapter import load_adapter
from relay_repl.core.approval import Approval, check
from relay_repl.core.errors import DiscoveryError
from relay_repl.core.plan import Plan
from relay_repl.system.proc import proc_start, same_process


def claude_config_dir() -> Path:
    """`$CLAUDE_CONFIG_DIR` or `~/.claude`, as the Claude adapter's registry block says."""
    return load_adapter("claude-code").registry.base()


def _pid_domain() -> str:
    try:
        machine = Path("/etc/machine-id").read_text().strip()
    except OSError:
        machine = "unknown"
    try:
        ns = os.readlink("/proc/self/ns/pid")
    except OSError:
        ns = "pid:[0]"
    return f"linux:{machine}:{ns}"


def live_claude_records(cfg: Path) -> list[dict[str, Any]]:
    """Live registry records (pid alive and procStart matching), newest first."""
    out = []
    for f in (cfg / "sessions").glob("*.json"):
        if not f.stem.isdigit():
            continue
        try:
            rec = json.loads(f.read_text())
        except (OSError, ValueError):
            continue
        pid = rec.get("pid")
        # the one liveness rule (system.proc): pid alive, not a zombie, procStart equal
        if isinstance(pid, int) and pid != os.getpid() and same_process(pid, rec.get("procStart"))[0]:
            out.append(rec)
    return sorted(out, key=lambda r: r.get("startedAt", 0), reverse=True)


class ClaudePeerRegistration:
    """Plans, performs and undoes the registration of one inbox."""

    def __init__(self, *, name: str, claude_version: str, cfg: Path | None = None) -> None:
        """`claude_version` must come from `agents.versions.require_verified`, which
        refuses versions this record format was not verified on."""
        self.cfg = cfg or claude_config_dir()
        self.claude_version = claude_version
        self.name = name
        peers = live_claude_records(self.cfg)
        with_sock = [r for r in peers if r.get("messagingSocketPath")]
        if not with_sock:
            raise DiscoveryError(
                f"no live Claude session under {self.cfg} has a messaging socket, so there is nobody to list the "
                "inbox for; start one (or `relay --lab`) and try again"
            )
        self.anchor = with_sock[0]
        self.socket_dir = Path(self.anchor["messagingSocketPath"]).parent
        taken = {r.get("name") for r in peers}
        if self.name in taken:
            self.name = f"{name}-{os.getpid()}"
        self.socket_path = self.socket_dir / f"{os.getpid()}.sock"
        while self.socket_path.exists() or self.socket_path.is_symlink():
            # never replace a file we did not create (a dead session's socket under a reused
            # pid, say): a fresh name, as Claude itself does (claude-code.md section 3.1)
            self.socket_path = self.socket_dir / f"{os.getpid()}-{secrets.token_hex(4)}.sock"
        self.record_path = self.cfg / "sessions" / f"{os.getpid()}.json"
        digest = hashlib.sha256(str(self.socket_path).encode()).hexdigest()
        self.key_path = self.cfg / "sessions" / f"{os.getpid()}.{digest}.key"
        now = int(time.time() * 1000)
        start = proc_start(os.getpid()) or ""
        self.record: dict[str, Any] = {
            "pid": os.getpid(),
            "sessionId": str(uuid.uuid4()),
            "cwd": os.getcwd(),
            "startedAt": now,
            "procStart": start,
            "version": claude_version,
            "peerProtocol": 1,
            "peerFeatures": [],
            "kind": "interactive",
            "entrypoint": "relay-repl",
            "pidDomain": _pid_domain(),
            "messagingSocketPath": str(self.socket_path),
            "name": self.name,
            "nameSource": "user",
            "nameSince": now,
            "updatedAt": now,
            "status": "idle",
            "statusUpdatedAt": now,
        }
        self.key = {"peerToken": secrets.token_hex(16), "procStart": start, "pidDomain": self.record["pidDomain"]}

    def plan(self) -> Plan:
        return Plan(
            action="list the operator inbox as a Claude peer",
            target=f"Claude registry {self.cfg}/sessions (read by `claude agents --json` and ListAgents)",
            identified_by=(
                f"socket directory of live session {self.anchor.get('name')} (pid {self.anchor.get('pid')}) "
                "from its registry record"
            ),
            transport=f"write {self.record_path.name} + key file; listen on {self.socket_path}",
            fallback="none: `relay reply` still reaches the inbox without it",
            payload=json.dumps(self.record, separators=(",", ":")),
            delivered_when=f"`claude agents --json` lists {self.name!r} with pid {os.getpid()}",
            notes=("removed again when the REPL exits; a crash is cleaned by the next start",),
            files=self.plan_files(),
        )

    def plan_files(self) -> tuple[str, ...]:
        """Every file `write` and the listener create or replace (a file already at the
        record's or key's name is a dead process's leftover under our reused pid: no
        live process can hold our pid)."""
        def verb(p: Path) -> str:
            return f"replaces {p} (left there by a dead process that had pid {os.getpid()})" if p.exists() \
                else f"creates {p}"

        return (f"{verb(self.record_path)}: the registry record (payload 3)",
                f"{verb(self.key_path)}: its key file (mode 0600, a fresh peerToken)",
                f"creates {self.socket_path}: the listening socket Claude sessions reply to")

    def write(self, approval: Approval | None = None) -> None:
        """Write the record and key file: only under the gate's approval of `plan()`."""
        check(approval, what=f"writing {self.record_path} into Claude's registry",
              payload=json.dumps(self.record, separators=(",", ":")), file=str(self.record_path))
        sessions = self.cfg / "sessions"
        tmp = self.key_path.with_name(self.key_path.name + f".tmp.{secrets.token_hex(4)}")
        tmp.write_text(json.dumps(self.key))
        os.chmod(tmp, 0o600)
        tmp.replace(self.key_path)
        tmp = sessions / f".{os.getpid()}.json.tmp"
        tmp.write_text(json.dumps(self.record))
        os.chmod(tmp, 0o644)
        tmp.replace(self.record_path)

    def files(self) -> tuple[Path, ...]:
        """The record and key file `write` creates (the inbox removes them at exit)."""
        return (self.record_path, self.key_path)

    def remove(self) -> None:
        for p in (self.record_path, self.key_path):
            try:
                p.unlink()
            except FileNotFoundError:
                pass
