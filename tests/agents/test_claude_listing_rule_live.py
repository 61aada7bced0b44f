"""Live: Claude's listing rule applied in-process lists what the pinned `claude agents --json` lists,
on the lab's own registry (a real interactive session, its real record) and with every registry
hazard added beside it: a killed session, a zombie, a reused pid, a second record with the live
session's name, `waiting` and `shell` records, an orphaned legacy `pid-<n>.json`, no procStart.
And relay's discovery gives the same targets either way."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from relay_repl.agents import PaneRoster
from relay_repl.agents.claude_code import ClaudeProvider
from relay_repl.agents.claude_code.listing_rule import listing_rows
from relay_repl.lab.install import bin_dir
from relay_repl.system.proc import proc_start
from tests.agents.test_claude_listing_rule import real_listing, rule_over, target_rows
from tests.agents.test_claude_registry import dead_pid

pytestmark = [pytest.mark.live, pytest.mark.anyio]


def lab_provider(rule: bool) -> ClaudeProvider:
    env = dict(os.environ)
    env["RELAY_CLAUDE_BIN"] = str(bin_dir() / "claude")
    return ClaudeProvider(env=env, panes=PaneRoster(env=env, ttl=0), listing_rule=rule)


async def test_the_rule_and_the_real_listing_agree_on_the_lab_and_every_hazard(lab):
    cfg = Path(os.environ["CLAUDE_CONFIG_DIR"])
    sessions = cfg / "sessions"
    exe = str(bin_dir() / "claude")
    alpha = next(s for s in lab.sessions if s.kind == "claude-code")

    def agree() -> list:
        rule = rule_over(sessions)
        assert rule.undecided == {}, rule.undecided
        listed = real_listing(exe, cfg)
        assert sorted(rule.rows) == sorted(listing_rows(listed)), listed  # order: by startedAt, ties as the directory lists
        return listed

    listed = agree()  # the lab as it is: its real session, listed by both
    assert alpha.pid in {r["pid"] for r in listed}

    sleepers = [subprocess.Popen(["sleep", "600"]) for _ in range(5)]
    zombie = subprocess.Popen(["sleep", "600"])
    made: list[Path] = []
    try:
        base = json.loads((sessions / f"{alpha.pid}.json").read_text())

        def put(fname: str, pid: int, **fields) -> None:
            rec = {**base, "pid": pid, "procStart": proc_start(pid) or "4242", "sessionId": f"hazard-{pid}",
                   "messagingSocketPath": f"/nonexistent/{pid}.sock", **fields}
            rec.pop("tmux", None)
            path = sessions / fname
            path.write_text(json.dumps({k: v for k, v in rec.items() if v is not None}))
            made.append(path)

        s = [p.pid for p in sleepers]
        put(f"{s[0]}.json", s[0], name=base.get("name"))  # a second record with the live session's name
        put(f"{s[1]}.json", s[1], name="held", status="waiting", waitingFor="permission prompt")
        put(f"{s[2]}.json", s[2], name="shelled", status="shell")
        put(f"{s[3]}.json", s[3], name="reused", procStart="1")
        put(f"{s[4]}.json", s[4], name="nostart", procStart=None)
        gone = dead_pid()
        put(f"{gone}.json", gone, name="killed", status="busy")
        zstart = proc_start(zombie.pid)
        os.kill(zombie.pid, signal.SIGKILL)
        time.sleep(0.2)  # not reaped: a zombie
        put(f"{zombie.pid}.json", zombie.pid, name="zombie", procStart=zstart)
        legacy = sessions / f"pid-{s[0]}.json"
        legacy.write_text(json.dumps({"pid": s[0], "session_id": "legacy", "proc_start": proc_start(s[0]),
                                      "messaging_socket_path": "/nonexistent/legacy.sock", "name": "legacy"}))
        made.append(legacy)

        listed = agree()
        assert {s[0], s[1], s[2], s[4], zombie.pid} <= {r["pid"] for r in listed}  # what Claude itself lists

        with_rule = await lab_provider(rule=True).discover()
        with_listing = await lab_provider(rule=False).discover()
        assert target_rows(with_rule) == target_rows(with_listing)
        # issue 40: `relay targets`' plain listing (no models) gives these very targets, field for field
        from relay_repl.core.target_row import target_json
        from relay_repl.frontends.targets_plain import plain_rows

        rows = dict(plain_rows())["claude-code"]
        assert rows is not None
        assert ([target_json(r, r.detail) for r in rows]
                == [target_json(t, t.detail.model_dump(mode="json")) for t in with_rule])
        named = {t.name: t for t in with_rule if t.pid != alpha.pid}
        assert (named["held"].state, named["shelled"].state) == ("waiting", "idle")
        assert not named["killed"].live and not named["zombie"].live and not named["reused"].live
        assert not named["nostart"].live  # Claude lists it; relay's rule does not trust a record with no start
        assert not named[legacy.stem].live and "legacy record" in named[legacy.stem].stale_reason
        live_alpha = [t for t in with_rule if t.live and t.name == base.get("name")]
        assert sorted(t.pid for t in live_alpha) == sorted([alpha.pid, s[0]])  # both: the session refuses the name
    finally:
        for p in made:
            p.unlink(missing_ok=True)
        for p in [*sleepers, zombie]:
            p.kill()
            p.wait()
