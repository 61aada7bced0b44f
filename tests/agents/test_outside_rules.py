"""Each kind's negative ancestry rule (`surely_outside`, entry-point group `relay_repl.surely_outside`)
against the kind's full judge (`identify_process`), over real registry files, real flocks held by
real processes, a real listening socket, a real Gemini-looking argv, and a recorded /proc-like tree
where a holder's descriptors are hidden.

What must hold (issue 33): a rule says True ("surely no session of mine in this chain") only where
the full judge finds none; wherever the judge finds a session, the rule says False. The rules are
loaded by file, as session/core/outside.py loads them, so a rule that reached for the agents package
would fail here too."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from relay_repl.agents.adapter import load_adapter
from relay_repl.session.core.outside import OUTSIDE_GROUP
from relay_repl.store.adapter_files import registry_path
from relay_repl.system.entry_points import scan_entry_points
from relay_repl.system.prefetch import load_by_file
from relay_repl.system.proc import ancestors, file_key, proc_start
from tests.agents.test_claude_registry import provider as claude_provider
from tests.agents.test_codex_registry import HOLDER, T1, T2, holders, home, lock, mark_daemon  # noqa: F401
from tests.agents.test_codex_registry import provider as codex_provider


def rule(kind: str):
    """The kind's declared rule, loaded by file (no agents package), as session/core/outside.py does."""
    value = {ep.name: ep.value for ep in scan_entry_points(OUTSIDE_GROUP)}[kind]
    module, _, attr = value.partition(":")
    mod = load_by_file(kind, module, OUTSIDE_GROUP)
    assert mod is not None, value
    return getattr(mod, attr)


def test_every_registered_kind_declares_a_rule():
    kinds = {ep.name for ep in scan_entry_points("relay_repl.agents")}
    assert kinds and kinds <= {ep.name for ep in scan_entry_points(OUTSIDE_GROUP)}


@pytest.mark.parametrize("kind", ["claude-code", "codex", "gemini-cli"])
def test_the_plain_registry_read_is_the_adapters(kind, tmp_path):
    reg = load_adapter(kind).registry
    for env in ({"HOME": str(tmp_path)}, {"HOME": str(tmp_path), reg.env: str(tmp_path / "elsewhere")},
                {"HOME": "", reg.env: ""}):
        for key, rel in reg.paths.items():
            assert registry_path(kind, key, env) == str(reg.base(env) / rel), (env, key)
    assert registry_path(kind, "no-such-key", {"HOME": str(tmp_path)}) is None


def test_an_adapter_not_plainly_read_excludes_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("RELAY_ADAPTERS_DIR", str(tmp_path))
    for text in ("no block at all", "```toml\nkind = 'codex'\n[registry\n```\n",
                 "```toml\nkind = 'claude-code'\n[registry]\nenv = 'X'\ndefault = '~'\n[registry.paths]\n```\n"):
        (tmp_path / "codex.md").write_text(text)
        (tmp_path / "claude-code.md").write_text(text)
        assert registry_path("codex", "daemon_pid", {}) is None
        assert rule("codex")([os.getpid()], {"HOME": str(tmp_path)}) is False
        assert rule("claude-code")([os.getpid()], {"HOME": str(tmp_path)}) is False


# -- Claude Code: the session record comes first -----------------------------------------------------------


def claude_session(cfg: Path, sock_path: Path, pid: int) -> socket.socket:
    """`pid`'s live registry record naming a socket this test process listens on."""
    (cfg / "sessions").mkdir(parents=True, exist_ok=True)
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(str(sock_path))
    srv.listen()
    (cfg / "sessions" / f"{pid}.json").write_text(json.dumps({
        "pid": pid, "procStart": proc_start(pid), "sessionId": "s-1", "cwd": "/w", "kind": "interactive",
        "messagingSocketPath": str(sock_path), "name": "alpha", "status": "idle", "version": "2.1.332"}))
    return srv


def test_claude_a_live_session_in_the_chain_is_never_excluded(tmp_path):
    cfg = tmp_path / "claude"
    prov = claude_provider(cfg, tmp_path)
    chain = ancestors(os.getpid())
    surely = rule("claude-code")
    assert surely(chain, prov.env) is True  # no record at all
    assert all(prov.identify_process(p) is None for p in chain)
    srv = claude_session(cfg, tmp_path / "s.sock", os.getpid())
    try:
        assert prov.identify_process(os.getpid()) is not None  # the judge finds it ...
        assert surely(chain, prov.env) is False  # ... so the rule cannot exclude
        assert surely(chain[1:], prov.env) is True  # the record names a pid outside this chain
    finally:
        srv.close()
    assert prov.identify_process(os.getpid()) is None  # a stale record: the judge says no ...
    assert surely(chain, prov.env) is False  # ... the rule, reading no more than names, still defers


def test_claude_the_config_dir_is_the_environments(tmp_path):
    cfg = tmp_path / "claude"
    srv = claude_session(cfg, tmp_path / "s.sock", os.getpid())
    try:
        assert rule("claude-code")([os.getpid()], {"HOME": str(tmp_path), "CLAUDE_CONFIG_DIR": str(cfg)}) is False
        assert rule("claude-code")([os.getpid()], {"HOME": str(tmp_path)}) is True  # ~/.claude: none there
        (tmp_path / ".claude").symlink_to(cfg)
        assert rule("claude-code")([os.getpid()], {"HOME": str(tmp_path)}) is False
    finally:
        srv.close()


# -- Codex: a thread's writer lock or the daemon --------------------------------------------------------


def test_codex_a_lock_holder_in_the_chain_is_never_excluded(home, tmp_path, holders):  # noqa: F811
    prov = codex_provider(home, tmp_path)
    surely = rule("codex")
    lock(home, T1), lock(home, T2)
    pid = holders(home / "thread-writer-locks" / f"{T1}.lock")
    chain = ancestors(pid)
    assert prov.identify_process(pid) is not None
    assert surely(chain, prov.env) is False
    assert surely(chain[1:], prov.env) is True  # its parents hold no thread
    other = tmp_path / "unrelated.txt"
    other.touch()
    pid2 = holders(other)  # HOLDER locks only .lock files: this one holds nothing
    assert prov.identify_process(pid2) is None and surely(ancestors(pid2), prov.env) is True
    pid3 = holders(tmp_path / "stray.lock")  # a .lock outside the locks dir: no thread's, both say so
    assert prov.identify_process(pid3) is None and surely([pid3], prov.env) is True
    pid4 = holders(home / "thread-writer-locks" / ".coordination.lock")  # Codex's own, no thread's: the judge
    assert prov.identify_process(pid4) is None and surely([pid4], prov.env) is False  # says no, the rule defers


def test_codex_the_daemon_in_the_chain_is_never_excluded(home, tmp_path):  # noqa: F811
    prov = codex_provider(home, tmp_path)
    chain = ancestors(os.getpid())
    assert rule("codex")(chain, prov.env) is True
    mark_daemon(home, chain[-1])
    assert prov.identify_process(chain[-1]) is not None
    assert rule("codex")(chain, prov.env) is False
    (home / "app-server-daemon" / "daemon.pid").write_text("{not json")
    assert prov.identify_process(chain[-1]) is None and rule("codex")(chain, prov.env) is True


def hidden_fd_proc(tmp_path: Path, pid: int, locks_text: str) -> Path:
    """A recorded /proc-like tree where `pid`'s descriptors cannot be listed (fd is no directory,
    as for another user's process), /proc/locks says `locks_text`, and `pid` and its parent are
    alive (their stat lines, copied)."""
    proc = tmp_path / "proc"
    for p in (pid, os.getppid()):
        (proc / str(p)).mkdir(parents=True)
        (proc / str(p) / "stat").write_text(Path(f"/proc/{p}/stat").read_text())
    (proc / str(pid) / "fd").write_text("")
    (proc / "locks").write_text(locks_text)
    return proc


def locks_line(n: int, pid: int, path: Path) -> str:
    maj, mnr, ino = file_key(path) or (0, 0, 0)
    return f"{n}: FLOCK  ADVISORY  WRITE {pid} {maj:02x}:{mnr:02x}:{ino} 0 EOF\n"


def test_codex_where_a_holders_descriptors_are_hidden_the_lock_table_decides(home, tmp_path):  # noqa: F811
    prov = codex_provider(home, tmp_path)
    surely = rule("codex")
    held, free = lock(home, T1), lock(home, T2)
    me, parent = os.getpid(), os.getppid()
    proc = hidden_fd_proc(tmp_path, me, locks_line(1, parent, held))
    assert surely([me], prov.env, proc=proc) is True  # the table names another (live) holder
    proc = hidden_fd_proc(tmp_path / "b", me, locks_line(1, me, held))
    assert surely([me], prov.env, proc=proc) is False  # it names us
    proc = hidden_fd_proc(tmp_path / "c", me, locks_line(1, 4_000_000, free))
    assert surely([me], prov.env, proc=proc) is False  # a holder not seen alive: fuser's question, not ours
    proc = hidden_fd_proc(tmp_path / "d", me, "")
    (proc / "locks").unlink()
    assert surely([me], prov.env, proc=proc) is False  # no table: cannot tell


# -- Gemini CLI: a process running it ------------------------------------------------------------------


def test_gemini_a_process_running_it_is_never_excluded(tmp_path):
    surely = rule("gemini-cli")
    assert surely(ancestors(os.getpid()), {}) is True
    p = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()",
                          str(tmp_path / "node_modules/@google/gemini-cli/bundle/gemini.js")], stdin=subprocess.PIPE)
    try:
        for _ in range(200):  # until the child has exec'd
            if "gemini.js" in Path(f"/proc/{p.pid}/cmdline").read_text():
                break
            import time

            time.sleep(0.01)
        assert surely([p.pid, *ancestors(os.getpid())], {}) is False
    finally:
        p.kill()
        p.wait()
