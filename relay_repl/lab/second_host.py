"""The lab's second "host": `relay lab up --hosts 2`.

Why: relay reaches other machines only over the system's OpenSSH, and that path must be
tested live, end to end, on one machine. The second host is:

- a network namespace of its own (`ip netns`), joined to the operator's namespace by one
  veth pair on a private /30; its `sshd` (Debian's openssh-server) listens on that link
  only, with a host key and an authorised user key the lab generates;
- a whole lab of its own (real Claude Code and Codex against their own stubs, their own
  tmux server and registries) under its own RELAY_HOME (`<lab>-h2/`), started by running
  `relay lab up` with that RELAY_HOME; a login over ssh gets that RELAY_HOME and that
  lab's environment (sshd `SetEnv`), so `relay serve --stdio` there sees only host 2;
- the operator's side: `<lab>/ssh/config` (an alias `h2` with the lab's key and known_hosts)
  and `<lab>/hosts.toml` naming it. Nothing goes into the user's ~/.ssh: relay passes the
  lab's config with `ssh -F` only in lab mode (store.hosts.ssh_config_file).

Synchronous, like the launcher; every failure is a LabError with one line.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

from pydantic import BaseModel

from relay_repl.system.polling import poll_until_sync
from relay_repl.core.errors import LabError
from relay_repl.store.hosts import HostEntry, save_hosts

from relay_repl.lab.install import bin_dir, clients_root
from relay_repl.lab.layout import Layout, client_home_vars

Progress = Callable[[str], object]

HOST_NAME = "h2"
SSHD = "/usr/sbin/sshd"
SSHD_READY_TIMEOUT = 10.0
SUB_LAB_TIMEOUT = 400.0


class SecondHost(BaseModel):
    """What `up` made, saved as `<lab>/ssh/second_host.json` so `down` can undo it."""

    name: str = HOST_NAME
    netns: str
    veth: str
    address: str  # the host's address on the private link
    home: str  # its RELAY_HOME
    sshd_pid: int | None = None
    host_key_sha256: str | None = None


def home_of(lay: Layout) -> Path:
    """The second host's RELAY_HOME: beside the lab directory, not in it (so the first
    lab's `down` never sweeps the second lab's files as its own)."""
    return lay.root.with_name(lay.root.name + "-h2")


def _names(root: Path) -> tuple[str, str, str, str]:
    """netns, veth (operator side; the peer ends in b), operator address, host address.

    From a hash of the lab directory: two labs on one machine get distinct names."""
    h = hashlib.sha256(str(root).encode()).hexdigest()
    octet = int(h[:2], 16) % 250 + 1
    sub = int(h[2:4], 16) % 63 * 4
    return f"relay-h2-{h[:8]}", f"rh{h[:8]}", f"10.213.{octet}.{sub + 1}", f"10.213.{octet}.{sub + 2}"


def _load(root: Path) -> SecondHost | None:
    try:
        return SecondHost.model_validate_json((root / "ssh" / "second_host.json").read_text())
    except (OSError, ValueError):
        return None


def _run(cmd: list[str], what: str, timeout: float = 30.0) -> str:
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise LabError(f"{what} failed: {exc}") from None
    if proc.returncode != 0:
        raise LabError(f"{what} failed: {(proc.stderr or proc.stdout).strip().splitlines()[-1:] or proc.returncode}")
    return proc.stdout


def available() -> str | None:
    """None when this machine can run a second host, else the one-line reason."""
    if os.geteuid() != 0:
        return "the second lab host needs root (ip netns, veth, sshd)"
    for tool in ("ip", "ssh", "ssh-keygen"):
        if not shutil.which(tool):
            return f"{tool} not found: install iproute2 and openssh-client"
    if not Path(SSHD).exists():
        return "sshd not found: install openssh-server (scripts/bootstrap does, as root)"
    return None


def sub_lab_env(home: Path) -> dict[str, str]:
    env = dict(os.environ)
    for k in (*sorted(client_home_vars()), "XDG_RUNTIME_DIR", "RELAY_LAB_DIR", "RELAY_TMUX_SOCKET", "TMPDIR"):
        env.pop(k, None)
    env["RELAY_HOME"] = str(home)
    env["RELAY_LAB_CLIENTS"] = str(clients_root())
    return env


def _start_sub_lab(home: Path, counts: Mapping[str, int], progress: Progress) -> dict[str, str]:
    """`relay lab up` under the second host's RELAY_HOME, `counts` ({kind: n}) by each lab kind's
    count flag; its `relay lab env` back."""
    from relay_repl.lab.kind_sessions import count_flags

    home.mkdir(parents=True, exist_ok=True, mode=0o700)
    env = sub_lab_env(home)
    progress(f"second host: starting its lab under {home}")
    flags = [arg for flag, k in count_flags().items() for arg in (f"--{flag}", str(counts.get(k.facts.kind, 0)))]
    cmd = [sys.executable, "-m", "relay_repl", "lab", "up", *flags]
    try:
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=SUB_LAB_TIMEOUT,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise LabError(f"the second host's lab did not come up in {SUB_LAB_TIMEOUT:g}s (RELAY_HOME={home})") from None
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or ["?"])[-1]
        raise LabError(f"the second host's lab failed: {tail}")
    lay2 = Layout.at(home / "lab")
    lenv = lay2.client_env(bin_dir(), outer={"PATH": f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin"})
    lenv["RELAY_HOME"] = str(home)
    lenv["RELAY_LAB_CLIENTS"] = str(clients_root())
    # a login's HOME is the second host's, as its agents' is: sshd runs the login shell, and bash run
    # by sshd reads $HOME/.bashrc, so with the operator's HOME every `relay serve` start ran the
    # operator's own dotfiles (this machine's root ~/.bashrc: `pyenv init`, ~100 processes, 0.1-0.3 s per
    # login; issue 33's cold figure counted it as the host's). tests/support/sshd.py does the same.
    lenv["HOME"] = str(lay2.home)
    return lenv


def _ensure_netns(netns: str, veth: str, mine: str, theirs: str) -> None:
    have = _run(["ip", "netns", "list"], "ip netns list")
    if netns not in {ln.split()[0] for ln in have.splitlines() if ln.strip()}:
        _run(["ip", "netns", "add", netns], f"ip netns add {netns}")
    links = _run(["ip", "-o", "link", "show"], "ip link show")
    if f" {veth}@" not in links and f" {veth}:" not in links:
        _run(["ip", "link", "add", veth, "type", "veth", "peer", "name", veth + "b"], "ip link add (veth)")
        _run(["ip", "link", "set", veth + "b", "netns", netns], "ip link set netns")
        _run(["ip", "addr", "add", f"{mine}/30", "dev", veth], "ip addr add")
        _run(["ip", "-n", netns, "addr", "add", f"{theirs}/30", "dev", veth + "b"], "ip addr add (host 2)")
    _run(["ip", "link", "set", veth, "up"], "ip link set up")
    _run(["ip", "-n", netns, "link", "set", veth + "b", "up"], "ip link set up (host 2)")
    _run(["ip", "-n", netns, "link", "set", "lo", "up"], "ip link set lo up (host 2)")


def _keygen(path: Path, comment: str) -> None:
    if not path.exists():
        _run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(path)], "ssh-keygen")


def _fingerprint(pub: Path) -> str:
    out = _run(["ssh-keygen", "-l", "-E", "sha256", "-f", str(pub)], "ssh-keygen -l")
    return out.split()[1]


def _write_ssh_files(d: Path, host: SecondHost, login_env: dict[str, str]) -> Path:
    host_key, user_key = d / "host_ed25519", d / "id_ed25519"
    _keygen(host_key, f"relay-lab-{HOST_NAME}-host")
    _keygen(user_key, "relay-lab-operator")
    (d / "authorized_keys").write_text(user_key.with_suffix(".pub").read_text())
    pub = host_key.with_suffix(".pub").read_text().split()
    (d / "known_hosts").write_text(f"{host.address} {pub[0]} {pub[1]}\n")
    user = os.environ.get("USER") or "root"
    (d / "config").write_text(
        f"# written by `relay lab up --hosts 2`; passed to ssh with -F in lab mode only\n"
        f"Host {HOST_NAME}\n"
        f"  HostName {host.address}\n"
        f"  User {user}\n"
        f"  IdentityFile {user_key}\n"
        f"  IdentitiesOnly yes\n"
        f"  UserKnownHostsFile {d / 'known_hosts'}\n"
        f"  GlobalKnownHostsFile /dev/null\n")
    sets = " ".join(f"{k}={v}" for k, v in sorted(login_env.items()) if " " not in v and '"' not in v)
    cfg = d / "sshd_config"
    cfg.write_text(
        f"ListenAddress {host.address}:22\n"
        f"HostKey {host_key}\n"
        f"AuthorizedKeysFile {d / 'authorized_keys'}\n"
        f"PidFile {d / 'sshd.pid'}\n"
        "StrictModes no\nUsePAM no\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n"
        "PermitRootLogin prohibit-password\nX11Forwarding no\nAllowTcpForwarding no\nMaxSessions 10\n"
        f"SetEnv {sets}\n")
    host.host_key_sha256 = _fingerprint(host_key.with_suffix(".pub"))
    return cfg


def _wait_port(addr: str, timeout: float) -> bool:
    """True once sshd on `addr` greets with its `SSH-` banner (within `timeout` seconds)."""
    def greets() -> bool | None:
        try:
            with socket.create_connection((addr, 22), timeout=1.0) as s:
                return True if s.recv(4).startswith(b"SSH-") else None
        except OSError:
            return None

    return bool(poll_until_sync(greets, timeout=timeout, interval=0.05))


def _sshd_alive(host: SecondHost) -> bool:
    if not host.sshd_pid:
        return False
    try:
        os.kill(host.sshd_pid, 0)
    except OSError:
        return False
    return _wait_port(host.address, 1.0)


def up(lay: Layout, progress: Progress = print, *, more: Mapping[str, int] | None = None, **flags: int) -> SecondHost:
    """Start what is missing of the second host (its lab restarts only dead sessions). Its sessions
    are counted as `lab.up`'s: by count flag (`up(lay, codex=2)`) or `more={kind: n}`, each lab kind
    not given starting its default count."""
    from relay_repl.lab.kind_sessions import lab_counts

    why = available()
    if why:
        raise LabError(why)
    login_env = _start_sub_lab(home_of(lay), lab_counts(flags, more), progress)
    host = up_link(lay.root, home_of(lay), login_env)
    progress(f"second host {HOST_NAME}: sshd pid {host.sshd_pid} on {host.address}:22 (netns {host.netns}), "
             f"host key {host.host_key_sha256}")
    return host


def up_link(root: Path, home: Path, login_env: dict[str, str]) -> SecondHost:
    """The namespace, the link, the keys and sshd of a second host whose logins get
    `login_env`; the ssh config and hosts.toml under `root` name it. Idempotent."""
    why = available()
    if why:
        raise LabError(why)
    netns, veth, mine, theirs = _names(root)
    d = root / "ssh"
    d.mkdir(parents=True, exist_ok=True, mode=0o700)
    host = _load(root) or SecondHost(netns=netns, veth=veth, address=theirs, home=str(home))
    (d / "second_host.json").write_text(host.model_dump_json(indent=1))  # from here `down` can undo it
    _ensure_netns(netns, veth, mine, theirs)
    cfg = _write_ssh_files(d, host, login_env)
    if not _sshd_alive(host):
        Path("/run/sshd").mkdir(exist_ok=True)  # sshd's privilege-separation directory
        _run(["ip", "netns", "exec", netns, SSHD, "-f", str(cfg), "-E", str(d / "sshd.log")], "sshd start")
        if not _wait_port(theirs, SSHD_READY_TIMEOUT):
            raise LabError(f"the second host's sshd does not answer on {theirs}:22 (log {d / 'sshd.log'})")
        host.sshd_pid = int((d / "sshd.pid").read_text().strip())
    (d / "second_host.json").write_text(host.model_dump_json(indent=1))
    save_hosts(root / "hosts.toml", [HostEntry(name=HOST_NAME, destination=HOST_NAME)])
    return host


def down(lay: Layout, progress: Progress = print) -> bool:
    """Stop the second host's sshd and lab, remove its link and namespace; False if none."""
    host = _load(lay.root)
    if host is None:
        return False
    home = Path(host.home)
    if (home / "lab").exists():
        subprocess.run([sys.executable, "-m", "relay_repl", "lab", "down"], env=sub_lab_env(home),
                       capture_output=True, timeout=120, stdin=subprocess.DEVNULL)
        shutil.rmtree(home / "lab" / "cache", ignore_errors=True)
    down_link(lay.root)
    progress(f"second host {host.name} down (netns {host.netns} removed)")
    return True


def down_link(root: Path) -> None:
    host = _load(root)
    if host is None:
        return
    if host.sshd_pid:
        try:
            os.kill(host.sshd_pid, signal.SIGTERM)
        except OSError:
            pass
    # every process left in the host's namespace: sshd's per-login processes outlive the listener
    # (and, once the link is gone, stay forever: seen, one per login of a test run, idle for hours)
    left = subprocess.run(["ip", "netns", "pids", host.netns], capture_output=True, text=True, timeout=30).stdout
    for pid in (int(p) for p in left.split() if p.isdigit()):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    subprocess.run(["ip", "link", "del", host.veth], capture_output=True, timeout=30)
    subprocess.run(["ip", "netns", "del", host.netns], capture_output=True, timeout=30)
    for name in ("second_host.json", "sshd.pid"):
        try:
            (root / "ssh" / name).unlink()
        except OSError:
            pass
    try:
        (root / "hosts.toml").unlink()
    except OSError:
        pass


def describe(lay: Layout) -> dict | None:
    host = _load(lay.root)
    return json.loads(host.model_dump_json()) if host else None
