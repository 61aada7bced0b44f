"""`relay hosts [--json]`, `relay hosts add NAME DESTINATION`, `relay hosts check [NAME]`,
and `relay serve --stdio` (the other end of a host's channel)."""

from __future__ import annotations

import argparse
import json
import sys


def register(sub) -> None:
    h = sub.add_parser(
        "hosts", help="machines reached over your ssh (list; add NAME DESTINATION; check [NAME])",
        description="Hosts relay reaches over the system's OpenSSH client (your ~/.ssh/config applies), stored in "
        "$RELAY_HOME/hosts.toml. Their sessions are addressed HOST/claude:NAME. relay never accepts a host key: "
        "connect once with your own ssh first.")
    h.add_argument("--json", action="store_true", help="the hosts as JSON")
    h.set_defaults(func=cmd_hosts)
    hsub = h.add_subparsers(dest="hosts_command", metavar="HOSTSCOMMAND")
    x = hsub.add_parser("add", help="add (or replace) a host", description="Add a host: NAME is how targets are "
                        "prefixed (NAME/claude:alpha); DESTINATION is as ssh takes it (user@host or a ~/.ssh/config alias).")
    x.add_argument("name")
    x.add_argument("destination")
    x.set_defaults(func=cmd_hosts_add)
    x = hsub.add_parser("check", help="reachable? host key known? remote relay version and its targets",
                        description="For each host (or NAME): reach it over ssh (BatchMode, strict host key checking), "
                        "name its host key, ask its relay for its version and targets. Exit 1 if any host fails.")
    x.add_argument("name", nargs="?")
    x.add_argument("--json", action="store_true")
    x.set_defaults(func=cmd_hosts_check)
    s = sub.add_parser("serve", help="answer another relay over ssh (`relay serve --stdio`; not for a terminal)",
                       description="Run by a relay on another machine through ssh: newline-delimited JSON requests "
                       "on stdin, one answer per line on stdout. Nothing listens on a port.")
    s.add_argument("--stdio", action="store_true", required=True, help="speak on stdin/stdout (the only mode)")
    s.set_defaults(func=cmd_serve)


def cmd_hosts(args: argparse.Namespace) -> int:
    from relay_repl.store.hosts import hosts_file, load_hosts

    hosts = load_hosts()
    if args.json:
        print(json.dumps([h.model_dump() for h in hosts], indent=1))
        return 0
    if not hosts:
        print(f"no hosts in {hosts_file()} (add one with `relay hosts add NAME DESTINATION`)")
        return 0
    w = max(len(h.name) for h in hosts)
    print(f"{'HOST'.ljust(w)}  DESTINATION")
    for h in hosts:
        print(f"{h.name.ljust(w)}  {h.destination}")
    return 0


def cmd_hosts_add(args: argparse.Namespace) -> int:
    from relay_repl.store.hosts import add_host, hosts_file

    h = add_host(args.name, args.destination)
    print(f"host {h.name} -> {h.destination} in {hosts_file()}; next: `relay hosts check {h.name}`")
    return 0


def cmd_hosts_check(args: argparse.Namespace) -> int:
    import anyio

    from relay_repl.session.remote import Hosts
    from relay_repl.store.hosts import find_host, hosts_file

    async def run() -> list[dict]:
        hosts = Hosts()
        names = [find_host(args.name).name] if args.name else [h.name for h in hosts.entries]
        out: list[dict] = [{} for _ in names]
        try:
            async with anyio.create_task_group() as tg:
                for i, n in enumerate(names):
                    async def one(i: int = i, n: str = n) -> None:
                        out[i] = await hosts.check(n)
                    tg.start_soon(one)
        finally:
            await hosts.aclose()
        return out

    reports = anyio.run(run)
    if args.json:
        print(json.dumps(reports, indent=1))
    elif not reports:
        print(f"no hosts in {hosts_file()} (add one with `relay hosts add NAME DESTINATION`)")
    for r in reports if not args.json else []:
        if r["problem"]:
            print(f"{r['name']}: {r['problem']}")
            continue
        print(f"{r['name']} ({r['destination']}): reachable, host key {r['host_key'] or 'known'}, relay {r['relay']} "
              f"(protocol {r['protocol']}, serve pid {r['pid']}), {len(r['targets'])} target(s): "
              f"{', '.join(r['targets']) or '-'}")
    return 1 if any(r["problem"] for r in reports) else 0


def cmd_serve(args: argparse.Namespace) -> int:
    from relay_repl.session.serve import run_stdio

    return run_stdio()


def print_problems(problems: list[str]) -> None:
    for p in problems:
        print(f"relay: {p}", file=sys.stderr, flush=True)
