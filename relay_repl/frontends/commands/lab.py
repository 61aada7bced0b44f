"""`relay lab ...` (install, up, status, down, env, attach) and `relay --lab`: the offline lab."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from relay_repl.frontends.kind_words import KindsHelp
from relay_repl.frontends.commands.common import progress
from relay_repl.frontends.inert_parser import InertParser


def _kind_flags() -> dict[str, tuple[str, str, int]]:
    """{flag: (kind, label, default count)} of every kind the lab runs, as each kind's package names it."""
    import relay_repl.lab.kind_sessions as kind_sessions
    from relay_repl.lab.kind_sessions import lab_kinds

    out: dict[str, tuple[str, str, int]] = {}
    for k in lab_kinds():
        spec = kind_sessions.driver(k).spec
        out[spec.count_flag] = (k.facts.kind, k.facts.label, spec.default_count)
    return out


class _KindFlagsParser(InertParser):
    """A `relay lab` subcommand parser that adds one flag per lab kind (from the registry) just
    before it parses: only when `relay lab up|install` runs, since loading every kind's package
    costs a cold start (0.2-1 s measured) that `relay targets`, `relay reply` and the rest must
    not pay for flags they never parse."""

    kind_flag_mode: str | None = None  # "count" (lab up) or "version" (lab install); None: no kind flags

    def parse_known_args(self, args: Sequence[str] | None = None,  # type: ignore[override]
                         namespace: argparse.Namespace | None = None) -> tuple[argparse.Namespace, list[str]]:
        if self.kind_flag_mode and not self.get_default("kind_flags"):
            flags = _kind_flags()
            for flag, (_kind, label, n) in flags.items():
                if self.kind_flag_mode == "count":
                    self.add_argument(f"--{flag}", type=int, default=n, help=f"{label} sessions (default {n})")
                else:
                    self.add_argument(f"--{flag}", metavar="VERSION",
                                      help=f"{label} version (x.y.z or latest; default: pinned)")
            self.set_defaults(kind_flags=flags)
        return super().parse_known_args(args, namespace)


def register(sub: Any) -> None:
    """Add `relay lab` to the subparsers."""
    lab = sub.add_parser(
        "lab",
        help="the offline lab: the real agent clients ({lab_kinds}) against stub models",
        description="Run the REAL pinned clients ({lab_kinds}) in a private tmux server against stub model "
        "servers on 127.0.0.1, with isolated homes, so every part of relay can be tried with no accounts.",
        formatter_class=KindsHelp,
    )
    lsub = lab.add_subparsers(dest="lab_command", metavar="LABCOMMAND", required=True, parser_class=_KindFlagsParser)
    x = lsub.add_parser("install", help="install the pinned clients (or other versions) from the npm registry",
                        formatter_class=KindsHelp,
                        description="Install the pinned clients of every lab kind ({lab_kinds}) into the "
                        "client cache (skips what is present). With --KIND VERSION (or `latest`), i.e. {kind_flags}, "
                        "install that set into its own "
                        "cache beside the pinned one; run it with `relay lab up --clients DIR` and check it with "
                        "`relay fidelity --clients DIR`.")
    assert isinstance(x, _KindFlagsParser)
    x.kind_flag_mode = "version"  # --<kind flag> VERSION, one per lab kind (added when it parses)
    x.set_defaults(func=cmd_lab_install, lab_use="none")
    x = lsub.add_parser("up", help="start what is missing of the lab and wait until every session is idle",
                        formatter_class=KindsHelp,
                        description="Start the lab, or only its dead sessions if it runs (live sessions are never "
                        "replaced); wait until every session is idle. For a fresh lab: `relay lab down`, then "
                        "`relay lab up`. Progress goes to stderr.")
    assert isinstance(x, _KindFlagsParser)
    x.kind_flag_mode = "count"  # --<kind flag> N, one per lab kind (added when it parses)
    x.add_argument("--clients", default="pinned", metavar="SET",
                   help="which clients the lab runs: pinned (default), latest (from npm), system (the {binaries} "
                        "on your PATH), or an npm prefix from `relay lab install --KIND V ...`; "
                        "a running lab keeps its clients (`relay lab down` first)")
    x.add_argument("--hosts", type=int, default=1, choices=(1, 2),
                   help="2: also a second lab host (its own network namespace, sshd and sessions), reached as h2/...")
    x.set_defaults(func=cmd_lab_up, lab_use="none")
    x = lsub.add_parser("status", help="what runs in the lab")
    x.add_argument("--json", action="store_true", help="lab directory, tmux socket, and per session kind, name, pid, pane, transcript")
    x.set_defaults(func=cmd_lab_status, lab_use="none")
    x = lsub.add_parser("down", help="stop everything the lab started and remove its sockets and registry files")
    x.set_defaults(func=cmd_lab_down, lab_use="none")
    x = lsub.add_parser("env", help="print shell exports that point other tools (and plain relay) at the lab")
    x.set_defaults(func=cmd_lab_env, lab_use="none")
    x = lsub.add_parser("attach", help="attach your terminal to one lab session's tmux window")
    x.add_argument("name")
    x.set_defaults(func=cmd_lab_attach, lab_use="none")


def cmd_lab_install(args: argparse.Namespace) -> int:
    from relay_repl.lab.install import VERIFIED_VERSIONS, described, install, install_versions, latest_versions

    asked = {kind: getattr(args, flag.replace("-", "_")) for flag, (kind, _l, _n) in args.kind_flags.items()}
    if not any(asked.values()):
        install(progress=progress)
        return 0
    want = dict(VERIFIED_VERSIONS)
    latest = latest_versions() if "latest" in asked.values() else {}
    for kind, v in asked.items():
        if v:
            want[kind] = latest[kind] if v == "latest" else v
    prefix = install_versions(want, progress=progress)
    print(f"{described(want)} in {prefix}")
    print(f"next: `relay fidelity --clients {prefix}` checks them; `relay lab up --clients {prefix}` runs them")
    return 0


def cmd_lab_up(args: argparse.Namespace) -> int:
    from relay_repl.lab.install import described, resolve_clients, set_root
    from relay_repl.lab.launcher import ensure_lab_counts

    if args.clients != "pinned":
        prefix, got = resolve_clients(args.clients, progress=progress)
        set_root(prefix)
        progress(f"lab clients: {described(got)} from {prefix}")
    counts = {kind: getattr(args, flag.replace("-", "_")) for flag, (kind, _l, _n) in args.kind_flags.items()}
    state = ensure_lab_counts(counts, progress=progress)
    print(f"lab ready: {state.lab_dir} (tmux -L {state.tmux_socket})")
    print("\n".join(state.targets()))
    if args.hosts == 2:
        from relay_repl.lab import second_host
        from relay_repl.lab.launcher import layout

        h2 = second_host.up(layout(), progress=progress, more=counts)
        print(f"second host {h2.name}: ssh {h2.address} (host key {h2.host_key_sha256}); its sessions are {h2.name}/...")
    print("next: `relay --lab` opens the REPL on it; `relay lab env` points other tools at it")
    return 0


def cmd_lab_status(args: argparse.Namespace) -> int:
    from relay_repl.lab.launcher import status

    state = status()
    if args.json:
        print(state.model_dump_json(indent=1) if state else "null")
        return 0
    if state is None:
        print("no lab running (start one with `relay lab up` or `relay --lab`)")
        return 0
    print(f"lab {state.lab_dir} ({state.phase}), tmux -L {state.tmux_socket}")
    print("\n".join(state.targets()))
    return 0


def cmd_lab_down(args: argparse.Namespace) -> int:
    from relay_repl.lab.launcher import down

    down(progress=progress)
    return 0


def cmd_lab_env(args: argparse.Namespace) -> int:
    import shlex

    from relay_repl.lab.launcher import env

    for k, v in env().items():
        print(f"export {k}={shlex.quote(v)}")
    return 0


def cmd_lab_attach(args: argparse.Namespace) -> int:
    from relay_repl.lab.launcher import attach

    attach(args.name)
    return 0


def use_lab(start: bool) -> None:
    """Point this process's environment at the lab; with `start`, first start what is missing.

    Only the REPL's start (`relay --lab`, `relay --lab repl`) starts anything, and then only
    the parts that are missing (launcher.ensure_lab never replaces a live session). Any other
    command uses the lab as it is: a dead session shows as stale, no lab shows as no targets,
    and a note on stderr says so."""
    import os

    from relay_repl.lab.launcher import env, status

    if start:
        from relay_repl.lab.kind_sessions import default_counts
        from relay_repl.lab.launcher import ensure_lab_counts

        ensure_lab_counts(default_counts(), progress=progress)
    else:
        st = status()
        if st is None:
            progress("relay: no lab running (`relay lab up` starts one); using its empty directories")
        else:
            dead = [s.name for s in st.sessions if not s.alive]
            if dead:
                progress(f"relay: lab session(s) {', '.join(dead)} not running (left as they are; "
                          "`relay lab up` restarts only those)")
    os.environ.update(env())
