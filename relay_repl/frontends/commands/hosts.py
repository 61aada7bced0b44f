"""`relay hosts [--json]`, `relay hosts add NAME DESTINATION`, `relay hosts check [NAME]`, and
`relay send HOST/kind:name ...` (the send planned and carried out by that host's relay)."""

from __future__ import annotations

import argparse
import json


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


def cmd_hosts(args: argparse.Namespace) -> int:
    from relay_repl.core.controls import visible
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
    for h in hosts:  # the loader refuses controls and bidi; the echo passes the one neutraliser all the same
        print(visible(f"{h.name.ljust(w)}  {h.destination}"))
    return 0


def cmd_hosts_add(args: argparse.Namespace) -> int:
    from relay_repl.core.controls import visible
    from relay_repl.store.hosts import add_host, hosts_file

    h = add_host(args.name, args.destination)
    print(visible(f"host {h.name} -> {h.destination} in {hosts_file()}; next: `relay hosts check {h.name}`"))
    return 0


def cmd_hosts_check(args: argparse.Namespace) -> int:
    import anyio

    from relay_repl.core.controls import visible
    from relay_repl.session.remote.remote import Hosts
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
        if r["problem"]:  # a remote relay's words and ssh's stderr: never raw to the terminal
            print(visible(f"{r['name']}: {r['problem']}"))
            continue
        print(visible(f"{r['name']} ({r['destination']}): reachable, host key {r['host_key'] or 'known'}, relay "
                      f"{r['relay']} (protocol {r['protocol']}, serve pid {r['pid']}), {len(r['targets'])} target(s): "
                      f"{', '.join(map(str, r['targets'])) or '-'}"))
    return 1 if any(r["problem"] for r in reports) else 0


def names_a_host(spec: str) -> bool:
    if "/" not in spec.partition(":")[0]:
        return False  # a host's name comes before a '/' that comes before the ':' (core/target.HOST_SPEC)
    from relay_repl.core.target import split_spec  # its home: not session/remote/remote.py (~35 models)

    return split_spec(spec)[0] is not None


def start_channel_early(spec: str) -> None:
    """The master to the host `spec` names, started before this command's heavy imports (issue 33): its
    connection runs beside them, and the channel that opens later adopts it (system/ssh.py). A host not
    in hosts.toml starts nothing here: the send says so in its own line."""
    from relay_repl.core.errors import RelayError
    from relay_repl.core.target import split_spec
    from relay_repl.store.hosts import control_dir, find_host, ssh_config_file
    from relay_repl.system.ssh import start_master_early

    name = split_spec(spec)[0]
    if name is None:
        return
    try:
        entry = find_host(name)
        start_master_early(entry.name, entry.destination, control_dir(), ssh_config_file())
    except RelayError:
        return


def send_to_host(args: argparse.Namespace, gate, out, err, wait: float, wants_answer: bool) -> int:
    """`relay send HOST/kind:name ...`: the host's relay plans and sends; y/N is asked here (its master
    started by `start_channel_early`, before the session's imports)."""
    import anyio

    from relay_repl.core.controls import visible
    from relay_repl.core.peertext import consent_flag
    from relay_repl.session.core.gate import TerminalGate
    from relay_repl.frontends.commands.common import inbox_open
    from relay_repl.session.app import make_session
    from relay_repl.session.remote.remote import Hosts, send_remote, wait_reply_remote

    approve = gate or TerminalGate()

    async def run():
        hosts = Hosts()
        # this command's own inbox listens while the plan is on screen: a relay-halt reaching it
        # is recorded at once and wins over the answer (session/remote/remote.py withholds the yes)
        session = make_session(discover=False, approve=approve, echo=err)
        ledger = session.ledger
        try:
            async with inbox_open(session, err):
                rd = await send_remote(hosts, args.target, args.message, approve=approve, ledger=ledger,
                                       want=args.want or "none", transport=args.transport, timeout=args.timeout,
                                       reply_via=args.reply_via if wants_answer else None, echo=err)
                answer = None
                d = rd.delivery
                if wants_answer and d.outcome not in ("refused", "halted") and d.state.value not in ("failed", "interrupted"):
                    err(f"waiting up to {wait:g}s for {d.target} to answer {d.relay_id} (in the inbox of the relay on {rd.host})")
                    answer = await wait_reply_remote(hosts, rd, wait, ledger=ledger)
                return rd, answer
        finally:
            await hosts.aclose()
            ledger.close()

    rd, answer = anyio.run(run)
    d = rd.delivery
    code = d.exit_code
    missing = None
    if wants_answer and d.outcome == "delivered" and answer is None:
        code = 3
        missing = f"no {args.want} from {d.target} to {d.relay_id} within {wait:g}s: the message was delivered on {rd.host}"
    if args.json:
        print(json.dumps({"relay_id": d.relay_id, "outcome": d.outcome, "state": d.state.value, "stage": d.stage,
                          "reason": d.reason, "target": d.target, "transport": d.transport, "host": rd.host,
                          "route": rd.route, "payload": d.plan.payload if d.plan else None,
                          "evidence": [e.model_dump(mode="json") for e in d.evidence],
                          "reply": None if answer is None else {
                              "relay_id": answer.message.relay_id, "answers": answer.message.answers,
                              "body": answer.message.body, "peer": answer.message.peer,
                              "verdict": answer.message.verdict.model_dump(mode="json") if answer.message.verdict else None,
                              "verified_by": answer.verified_by},
                          "missing": missing}))
    else:
        print(visible(d.summary()))
        if answer is not None:
            m = answer.message
            print(visible(f"reply {m.relay_id or ''} from {m.peer or '?'} [{answer.verified_by}]: {m.body}"))
            if flag := consent_flag(m.body):
                print(f"  FLAG: the reply {flag}")
    if missing:
        err(f"relay: {visible(missing)}")
    return code
