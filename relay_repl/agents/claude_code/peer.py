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

import json
import os
import secrets
from pathlib import Path
from typing import Any

from relay_repl.agents.adapter import load_adapter
from relay_repl.agents.claude_code import peer_record
from relay_repl.core.approval import Approval, check
from relay_repl.core.errors import DiscoveryError
from relay_repl.core.plan import Plan


def claude_config_dir() -> Path:
    """`$CLAUDE_CONFIG_DIR` or `~/.claude`, as the Claude adapter's registry block says."""
    return load_adapter("claude-code").registry.base()


def live_claude_records(cfg: Path) -> list[dict[str, Any]]:
    """Live registry records (pid alive and procStart matching), newest first (peer_record.py, its one home)."""
    return peer_record.live_records(cfg)


class ClaudePeerRegistration:
    """Plans, performs and undoes the registration of one inbox."""

    def __init__(self, *, name: str, claude_version: str, cfg: Path | None = None,
                 pins: dict[str, Any] | None = None) -> None:
        """`claude_version` must come from `agents.versions.require_verified`, which
        refuses versions this record format was not verified on. `pins`: the random and clock values a
        plain phase already drew and showed (peer_record.PINS); None draws them now."""
        self.cfg = cfg or claude_config_dir()
        self.claude_version = claude_version
        d = peer_record.draft(name=name, claude_version=claude_version, cfg=self.cfg, pins=pins)
        if d is None:
            raise DiscoveryError(
                f"no live Claude session under {self.cfg} has a messaging socket, so there is nobody to list the "
                "inbox for; start one (or `relay --lab`) and try again"
            )
        self._draft = d
        self.name = d.name
        self.anchor = d.anchor
        self.socket_dir = d.socket_path.parent
        self.socket_path = d.socket_path
        self.record_path = d.record_path
        self.key_path = d.key_path
        self.record: dict[str, Any] = d.record
        self.key = {"peerToken": secrets.token_hex(16), "procStart": d.start, "pidDomain": self.record["pidDomain"]}

    def plan(self) -> Plan:
        return Plan(**peer_record.plan_parts(self._draft))

    def plan_files(self) -> tuple[str, ...]:
        """Every file `write` and the listener create or replace (peer_record.plan_files)."""
        return peer_record.plan_files(self._draft)

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
