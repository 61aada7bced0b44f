"""Run a command in a private network namespace (loopback only), or in another process's.

Used by the lab so the real clients cannot reach anything but 127.0.0.1:

    python -m relay_repl.lab.netns --unshare -- CMD ...   # new netns, `lo` up, exec CMD
    python -m relay_repl.lab.netns --enter PID -- CMD ... # join PID's netns, exec CMD
    python -m relay_repl.lab.netns --probe                # exit 0 iff --unshare works here

Pure ctypes (unshare(2), setns(2), SIOCSIFFLAGS) and exec, so neither util-linux
nor iproute2 is needed. Unix sockets are not affected by a network namespace,
so tmux, the stub control socket and the agents' messaging sockets still cross.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import fcntl
import os
import socket
import struct
import sys

CLONE_NEWNET = 0x40000000
SIOCGIFFLAGS = 0x8913
SIOCSIFFLAGS = 0x8914
IFF_UP = 0x1


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)


def unshare_net() -> None:
    """Move the calling process into a new network namespace and bring `lo` up."""
    libc = _libc()
    if libc.unshare(CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"unshare(CLONE_NEWNET): {os.strerror(err)}")
    loopback_up()


def loopback_up() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        ifreq = struct.pack("16sH14x", b"lo", 0)
        flags = struct.unpack("16sH14x", fcntl.ioctl(s.fileno(), SIOCGIFFLAGS, ifreq))[1]
        fcntl.ioctl(s.fileno(), SIOCSIFFLAGS, struct.pack("16sH14x", b"lo", flags | IFF_UP))


def enter_net(pid: int) -> None:
    """Join the network namespace of process `pid`."""
    libc = _libc()
    fd = os.open(f"/proc/{pid}/ns/net", os.O_RDONLY)
    try:
        if libc.setns(fd, CLONE_NEWNET) != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"setns({pid}): {os.strerror(err)}")
    finally:
        os.close(fd)


def _probe() -> int:
    try:
        unshare_net()
        # A fresh namespace has only `lo`: prove nothing else is reachable.
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind(("127.0.0.1", 0))
    except OSError as exc:
        print(f"netns unavailable: {exc}", file=sys.stderr)
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args == ["--probe"]:
        return _probe()
    if "--" not in args:
        print("usage: netns (--unshare | --enter PID) -- CMD ...", file=sys.stderr)
        return 2
    i = args.index("--")
    opts, cmd = args[:i], args[i + 1 :]
    if not cmd:
        return 2
    try:
        if opts == ["--unshare"]:
            unshare_net()
        elif len(opts) == 2 and opts[0] == "--enter":
            enter_net(int(opts[1]))
        else:
            print(f"netns: bad options {opts}", file=sys.stderr)
            return 2
    except OSError as exc:
        print(f"netns: {exc}", file=sys.stderr)
        return 111
    os.execvp(cmd[0], cmd)
    return 127  # not reached


if __name__ == "__main__":
    raise SystemExit(main())
