"""Hosts over a real OpenSSH channel to a real sshd in its own network namespace (root only).

No agents here (the live tests add them): what is proven is the channel itself, with the
real `ssh` and `sshd`: one master, checked and replaced when stale, host keys never
accepted by relay, a down host reported in one line."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import anyio
import pytest

from relay_repl.core.errors import HostKeyError
from relay_repl.core.serve_wire import PROTOCOL_VERSION
from relay_repl.system.polling import poll_until
from relay_repl import __version__

pytestmark = pytest.mark.timeout(120)


def relay(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "relay_repl", *args], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=timeout, env=os.environ)


def fingerprint(root) -> str:
    out = subprocess.run(["ssh-keygen", "-l", "-E", "sha256", "-f", str(root / "ssh" / "host_ed25519.pub")],
                         capture_output=True, text=True, check=True).stdout
    return out.split()[1]


def accepted_logins(root) -> int:
    return (root / "ssh" / "sshd.log").read_text().count("Accepted publickey")


def test_hosts_lists_and_check_reaches_the_remote_relay(h2, relay_home):
    res = relay("hosts", "--json")
    assert res.returncode == 0 and json.loads(res.stdout) == [{"name": "h2", "destination": "h2"}]
    res = relay("hosts", "check", "--json")
    assert res.returncode == 0, res.stderr
    (r,) = json.loads(res.stdout)
    assert r["reachable"] and r["problem"] is None
    assert r["host_key"] == fingerprint(h2)
    assert r["relay"] == __version__ and r["protocol"] == PROTOCOL_VERSION and r["pid"] > 0
    assert r["targets"] == []  # a lab Gemini elsewhere on the machine is under another home: not listed
    # relay's own ControlMaster directory, under RELAY_HOME; nothing in the user's ~/.ssh
    assert any((relay_home / "ssh").iterdir())


def test_one_master_shared_by_every_call(h2, relay_home):
    from relay_repl.session.remote.remote import Hosts

    async def go():
        hosts = Hosts()
        ch = hosts.channel("h2")
        await ch.open()
        first = ch.master_pid
        for _ in range(3):
            assert await ch.request("targets") == []
        await hosts.aclose()
        hosts2 = Hosts()  # another caller (another relay process would do the same)
        ch2 = hosts2.channel("h2")
        await ch2.open()
        await hosts2.aclose()
        return first, ch.masters_started, ch2.master_pid, ch2.masters_started

    first, started, again, started2 = anyio.run(go)
    assert first and first == again and started == 1 and started2 == 0
    assert accepted_logins(h2) == 1  # one authenticated connection; the sessions ran inside it


def test_a_master_just_started_is_checked_while_the_serve_session_starts(h2, relay_home, monkeypatch):
    """Issue 33: the check of a new master (`ssh -O check`, which learns its pid) no longer stands in
    front of the serve session on a cold channel: the session is spawned before the check ends, and
    the channel still knows its master's pid when it is open. Old code: the check ended first."""
    from relay_repl.session.remote.remote import Hosts

    seen: list[str] = []
    spawn = anyio.open_process

    async def open_process(argv, **kw):
        seen.append("serve spawned")
        return await spawn(argv, **kw)

    monkeypatch.setattr(anyio, "open_process", open_process)

    async def go():
        hosts = Hosts()
        ch = hosts.channel("h2")
        run = ch._run

        async def logged(argv, timeout):
            got = await run(argv, timeout)
            if "-O" in argv:
                seen.append(f"check {argv[argv.index('-O') + 1]} ended")
            return got

        ch._run = logged  # type: ignore[method-assign]
        hello = await ch.open()
        pid = ch.master_pid
        await hosts.aclose()
        return hello, pid, ch.masters_started

    hello, pid, started = anyio.run(go)
    assert hello["protocol"] == PROTOCOL_VERSION and pid and started == 1
    assert seen.index("serve spawned") < seen.index("check check ended"), seen


def test_a_master_started_early_is_the_one_the_channel_adopts(h2, relay_home):
    """Issue 33: `relay send HOST/...` starts the host's master before its heavy imports; the channel that
    opens next waits for that very `ssh -N -f` instead of starting one, counts it as its own and checks it.
    Old code has no early start: it fails."""
    from relay_repl.session.remote.remote import Hosts
    from relay_repl.store.hosts import control_dir, ssh_config_file
    from relay_repl.system.ssh import start_master_early

    start_master_early("h2", "h2", control_dir(), ssh_config_file())
    start_master_early("h2", "h2", control_dir(), ssh_config_file())  # once per socket, however often asked
    ran: list[list[str]] = []

    async def go():
        ch = Hosts().channel("h2")
        run = ch._run

        async def logged(argv, timeout):
            ran.append(list(argv))
            return await run(argv, timeout)

        ch._run = logged  # type: ignore[method-assign]
        hello = await ch.open()
        await ch.close()
        return hello, ch.masters_started, ch.master_pid

    hello, started, pid = anyio.run(go)
    assert hello["protocol"] == PROTOCOL_VERSION and started == 1 and pid
    assert not [a for a in ran if "-N" in a], ran  # the channel started no master of its own
    assert accepted_logins(h2) == 1


def test_a_master_started_early_to_an_unknown_host_key_is_refused_in_the_same_line(h2, relay_home):
    (h2 / "ssh" / "known_hosts").write_text("")
    from relay_repl.session.remote.remote import Hosts
    from relay_repl.store.hosts import control_dir, ssh_config_file
    from relay_repl.system.ssh import start_master_early

    start_master_early("h2", "h2", control_dir(), ssh_config_file())

    async def go():
        await Hosts().channel("h2").open()

    with pytest.raises(HostKeyError, match="not known to ssh.*your own `ssh h2`"):
        anyio.run(go)
    assert accepted_logins(h2) == 0


def test_an_early_start_that_cannot_start_leaves_it_to_the_channel(tmp_path):
    """A control directory that cannot be made (a file in its place) starts nothing and raises nothing:
    the channel's own start, later, says why in its line. The early start as first committed (OSError not
    caught) fails it with NotADirectoryError: a traceback out of `relay send`."""
    from relay_repl.system import ssh

    blocked = tmp_path / "file"
    blocked.write_text("")
    before = dict(ssh._early)
    ssh.start_master_early("h9", "h9.invalid", blocked / "ssh")
    assert ssh._early == before


def test_relay_send_to_a_host_starts_its_master_before_the_session_is_imported(h2, relay_home):
    """The one-liner's order (frontends/commands/send.py): the early start runs before session.app is
    imported, so the connection overlaps those imports. Old code fails it (no early start at all)."""
    spy = (
        "import sys\n"
        "import relay_repl.system.ssh as ssh\n"
        "seen = []\n"
        "real = ssh.start_master_early\n"
        "def early(*a, **k):\n"
        "    seen.append('relay_repl.session.app' in sys.modules)\n"
        "    return real(*a, **k)\n"
        "ssh.start_master_early = early\n"
        "sys.argv = ['relay', 'send', 'h2/claude:alpha', 'hi']\n"
        "from relay_repl.frontends.cli import main\n"
        "try:\n"
        "    main()\n"
        "finally:\n"
        "    print('EARLY', seen, file=sys.stderr)\n")
    res = subprocess.run([sys.executable, "-c", spy], capture_output=True, text=True, stdin=subprocess.DEVNULL,
                         timeout=60, env=os.environ)
    assert "EARLY [False]" in res.stderr, res.stderr[-2000:]
    assert accepted_logins(h2) == 1  # the early master carried the send's session: no second login


def test_a_master_that_does_not_answer_its_check_refuses_the_channel(h2, relay_home):
    """Checked beside the serve session, a new master that does not answer still refuses the channel
    in one line, and the session opened meanwhile is closed."""
    from relay_repl.core.errors import HostError
    from relay_repl.session.remote.remote import Hosts

    async def go():
        hosts = Hosts()
        ch = hosts.channel("h2")

        async def silent() -> bool:
            return False

        ch.check = silent  # type: ignore[method-assign]
        try:
            with pytest.raises(HostError, match="does not answer `ssh -O check`"):
                await ch.open()
            return ch._proc
        finally:
            await ch.stop_master()

    assert anyio.run(go) is None


def test_changed_host_key_refused_nothing_run(h2):
    kh = h2 / "ssh" / "known_hosts"
    other = h2 / "ssh" / "other_key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True)
    addr = kh.read_text().split()[0]
    kh.write_text(f"{addr} {' '.join(other.with_suffix('.pub').read_text().split()[:2])}\n")
    res = relay("hosts", "check", "h2")
    assert res.returncode == 1
    assert "CHANGED" in res.stdout and "relay ran nothing there" in res.stdout and "ssh-keygen -R" in res.stdout
    assert accepted_logins(h2) == 0  # never authenticated, so no command ran on the host


def test_unknown_host_key_refused_with_the_next_step(h2):
    (h2 / "ssh" / "known_hosts").write_text("")
    from relay_repl.session.remote.remote import Hosts

    async def go():
        await Hosts().channel("h2").open()

    with pytest.raises(HostKeyError, match="not known to ssh.*your own `ssh h2`"):
        anyio.run(go)
    assert accepted_logins(h2) == 0


def test_hung_master_is_replaced_without_hanging(h2):
    from relay_repl.session.remote.remote import Hosts

    async def start() -> int:
        ch = Hosts().channel("h2")
        await ch.open()
        await ch.close()
        assert ch.master_pid
        return ch.master_pid

    hung = anyio.run(start)
    os.kill(hung, signal.SIGSTOP)  # the master lives but never answers: its socket still accepts
    try:
        t0 = time.monotonic()
        res = relay("hosts", "check", "h2", "--json", timeout=60)
        took = time.monotonic() - t0
        assert res.returncode == 0, res.stdout + res.stderr
        assert json.loads(res.stdout)[0]["reachable"]
        assert took < 30
    finally:
        try:
            os.kill(hung, signal.SIGKILL)
        except OSError:
            pass


def test_dead_master_socket_left_behind_is_recovered(h2):
    from relay_repl.session.remote.remote import Hosts

    async def go():
        ch = Hosts().channel("h2")
        await ch.open()
        await ch.close()
        path = await ch.control_path()
        os.kill(ch.master_pid, signal.SIGKILL)  # the socket file stays, nobody listens
        # dead once a zombie: its descriptors (the listening socket) are closed; waiting for the
        # reap too waited on this machine's init (1-5 s)
        assert await poll_until(lambda: _dead(ch.master_pid), timeout=10, interval=0.02)
        assert path.exists()
        ch2 = Hosts().channel("h2")
        with anyio.fail_after(30):
            assert await ch2.request("targets") == []
        await ch2.close()
        return ch2.masters_started

    assert anyio.run(go) == 1


async def _dead(pid: int) -> bool | None:
    """True once `pid` has exited (a zombie not yet reaped, or gone)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            state = fh.read().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return True
    return True if state in ("Z", "X") else None


def test_down_host_is_one_line_and_local_targets_still_listed(h2):
    with open(h2 / "ssh" / "config", "a") as fh:
        fh.write("Host dead\n  HostName 127.0.0.1\n  Port 1\n")
    with open(h2 / "hosts.toml", "a") as fh:
        fh.write('\n[hosts.dead]\ndestination = "dead"\n')
    res = relay("--fake", "targets", "--json")
    assert res.returncode == 0
    specs = [t["spec"] for t in json.loads(res.stdout)]
    assert "fake:inbox" in specs
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "host dead" in lines[0] and "not reachable" in lines[0]


def test_master_killed_while_the_plan_is_asked_leaves_it_interrupted_and_unsent(h2, tmp_path):
    """SIGKILL of the ssh master while the operator is answering: the delivery is `interrupted`
    here (with the next step: look there first), and the host's relay, which never got the
    digest back, answered its own gate No: its ledger has the plan and a No, nothing else."""
    from relay_repl.core.delivery import DeliveryState
    from relay_repl.session.remote.remote import Hosts, send_remote
    from relay_repl.store.ledger import Ledger

    hosts = Hosts(remote_command=("relay", "--fake", "serve", "--stdio"))
    shown = []

    async def approve(plan) -> bool:
        shown.append(plan)
        os.kill(hosts.channel("h2").master_pid, signal.SIGKILL)  # the channel dies as the operator says yes
        return True

    async def go():
        try:
            return await send_remote(hosts, "h2/fake:inbox", "hello", approve=approve, echo=lambda s: None)
        finally:
            await hosts.aclose()

    rd = anyio.run(go)
    assert len(shown) == 1 and "route: via ssh h2" in shown[0].render()
    d = rd.delivery
    assert d.state is DeliveryState.INTERRUPTED and d.outcome == "pending" and d.exit_code == 3
    assert "look at it there" in (d.reason or "")
    led = Ledger(tmp_path / "h2home" / "ledger.sqlite")
    try:
        deadline = time.monotonic() + 20  # the host's relay notices the closed channel on its own
        while time.monotonic() < deadline:
            events = led.events()
            if any(e.kind == "answer" for e in events):
                break
            time.sleep(0.1)  # the poll interval of this bounded wait
        kinds = [e.kind for e in events]
        answers = [e.data for e in events if e.kind == "answer"]
        assert "plan" in kinds and answers == [{"approved": False}]
        assert not any(e.kind.startswith("stage") or e.kind == "outcome" and e.data.get("state") not in (None, "withheld")
                       for e in events), kinds
    finally:
        led.close()


def test_what_the_host_writes_to_stderr_is_shown_inert_under_its_name(h2, relay_home, capfd):
    """The host's side of a channel (its relay's progress lines, a login script, ssh) writes to
    stderr; that text comes from another machine, so it reaches this terminal through `visible`
    and under the host's name: an escape sequence in it never draws on the operator's screen
    (old code: ssh's stderr was this process's own, the bytes went straight to the terminal)."""
    from relay_repl.session.remote.remote import Hosts

    hosts = Hosts(remote_command=("printf", "'\\033[2J\\033]0;owned\\007forged plan\\n'", ">&2;",
                                  "exec", "relay", "--fake", "serve", "--stdio"))

    async def go():
        try:
            return await hosts.channel("h2").open()
        finally:
            await hosts.aclose()

    hello = anyio.run(go)
    assert hello["protocol"] == PROTOCOL_VERSION
    err = ""
    deadline = time.monotonic() + 10
    while "forged plan" not in err and time.monotonic() < deadline:  # shown by the channel's reader thread
        err += capfd.readouterr().err
        time.sleep(0.05)  # the poll interval of this bounded wait
    line = next(ln for ln in err.splitlines() if "forged plan" in ln)
    assert line.startswith("host h2: "), line
    assert "\x1b" not in err and "\x07" not in err, repr(err)
