"""`relay send`: one line to one target (plan, y/N, deliver, confirm), optionally waiting for its answer."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from relay_repl.frontends.kind_words import KindsRawHelp
from relay_repl.core.controls import visible
from relay_repl.core.peertext import consent_flag
from relay_repl.frontends.commands.common import inbox_open


def register(sub: Any) -> None:
    """Add `relay send` to the subparsers."""
    s = sub.add_parser(
        "send",
        help="send one line to a target (plan, y/N, deliver, confirm)",
        description="Send MESSAGE to TARGET ({targets}, or %PANE; `relay targets` lists them). The plan is shown and "
        "you are asked y/N first; without a terminal the answer is No. A whole pasted envelope line as MESSAGE is "
        "forwarded instead (same id, hop + 1, the envelope's own want; --transport, --durable and --native-reply "
        "apply; a duplicate id is dropped, and the id counts as seen only once you answered y).\n\n"
        "With --want reply|ack the command keeps its own inbox open and waits (--wait SECONDS) for the answer, "
        "linked by its re= header and verified by the kernel pid of the process that sent it; a Claude target "
        "answers with SendMessage, so the inbox is listed as a Claude peer for that long (asked y/N first).\n\n"
        "exit codes: 0 delivered (receiver evidence) and, with --want, answered; 3 pending (the stage it stopped "
        "at is printed) or no answer within --wait; 1 refused, failed or halted (relay-halt), 2 usage error",
        formatter_class=KindsRawHelp,
    )
    s.add_argument("target")
    s.add_argument("message", help="one line; quote it")
    s.add_argument("--transport", "-t", help="require this transport ({transports})")
    s.add_argument("--want", "-w", choices=["reply", "ack", "none"], default=None,
                   help="what you ask the receiver for (default none; a forward keeps the envelope's own)")
    s.add_argument("--durable", action="store_true", help="require a durable path; refuse rather than downgrade")
    s.add_argument("--native-reply", action="store_true", help="require a transport the receiver can answer natively")
    s.add_argument("--interrupt", action="store_true", help="Claude socket only: priority now, aborting the receiver's running call")
    s.add_argument("--timeout", type=float, default=30.0, help="seconds to wait for receiver evidence (default 30)")
    s.add_argument("--wait", type=float, default=None, metavar="SECONDS",
                   help="with --want reply|ack: keep this command's inbox open and wait this long for the verified "
                   "answer (default 60); it is printed and the exit code is 0, or 3 when none came")
    s.add_argument("--reply-via", choices=["native", "relay-reply", "mcp", "turn"], default=None,
                   help="with --want: the reply route to ask for (default: the best the target's configuration "
                   "allows; `turn` reads the target's own final message from its transcript/rollout, which works "
                   "in any sandbox; `mcp` is relay_reply on the relay MCP server, see `relay mcp --help`)")
    s.add_argument("--json", action="store_true", help="print the delivery (and its answer) as JSON; progress goes to stderr")
    s.set_defaults(func=cmd_send)


def cmd_send(args: argparse.Namespace) -> int:
    import anyio
    import json

    from relay_repl.core.envelope import Envelope
    from relay_repl.core.errors import UsageError

    wants_answer = args.want not in (None, "none")  # None: not given (a forward keeps the envelope's own)
    if args.reply_via is not None and not wants_answer:
        raise UsageError("--reply-via names how an answer comes back: add --want reply (or --want ack)")
    if args.wait is not None and not wants_answer:
        raise UsageError("--wait waits for an answer: add --want reply (or --want ack)")
    if args.wait is not None and args.wait <= 0:
        raise UsageError(f"--wait {args.wait:g}: give a number of seconds above 0")
    wait = args.wait if args.wait is not None else 60.0
    from relay_repl.frontends.commands import hosts

    if hosts.names_a_host(args.target):  # its ssh master connects while the rest is imported (issue 33)
        hosts.start_channel_early(args.target)

    def err(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    out = err if args.json else print  # --json: stdout holds the JSON only
    answer = None

    # frontends/send_plain.py printed the plan already: the id it shows, and a gate that knows its digest
    gate, pinned = getattr(args, "preshown", None) or (None, None)
    if args.json:  # the plan and the y/N prompt (on the terminal) go to stderr as well
        from prompt_toolkit.output import create_output

        from relay_repl.session.core.gate import TerminalGate

        gate = TerminalGate(output=create_output(stdout=sys.stderr), write=err,
                            isatty=lambda: sys.stdin.isatty() and sys.stderr.isatty())

    if hosts.names_a_host(args.target):  # HOST/kind:name: planned and carried out by that host's relay
        return hosts.send_to_host(args, gate, out, err, wait, wants_answer)
    from relay_repl.core.envelope import check_body
    from relay_repl.core.errors import EnvelopeError

    try:
        pasted = Envelope.parse(args.message) is not None
    except EnvelopeError:
        pasted = True  # a malformed envelope: the forward says what is wrong with it
    if not pasted:  # refused (too long, a control character) before the session makes RELAY_HOME's files
        check_body(args.message)
    from relay_repl.session.app import make_session  # after: a host's send starts its ssh master before it

    async def run():
        nonlocal answer, wants_answer
        session = make_session(fake=args.fake, interrupt=args.interrupt, approve=gate, echo=out)
        async with inbox_open(session, out):
            if Envelope.parse(args.message) is not None:
                wants_answer = False  # the answer to a forward goes to its original sender, not here
                return await session.forward(args.target, args.message, transport=args.transport,
                                             durable=args.durable, native_reply=args.native_reply, want=args.want,
                                             timeout=args.timeout)
            d = await session.send(args.target, args.message, want=args.want or "none", transport=args.transport,
                                   durable=args.durable, native_reply=args.native_reply, timeout=args.timeout,
                                   reply_via=args.reply_via if wants_answer else None, relay_id=pinned)
            if wants_answer and d.outcome not in ("refused", "halted") and d.state.value != "failed":
                session.echo = err  # progress of the wait: stderr
                err(f"waiting up to {wait:g}s for {d.target} to answer {d.relay_id} "
                    f"(this command's inbox closes when it exits)")
                answer = await d.wait_reply(wait)
            return d

    d = anyio.run(run)
    code = d.exit_code
    missing = None
    if wants_answer and d.outcome == "delivered" and answer is None:
        code = 3
        missing = (f"no {args.want} from {d.target} to {d.relay_id} within {wait:g}s: the message was delivered, "
                   f"the answer is what is missing; this command's inbox is closed now, so a later answer will not "
                   f"reach it (wait longer with --wait, or ask from the `relay` REPL)")
    elif wants_answer and d.outcome == "pending" and answer is None:
        missing = (f"pending at stage {d.stage} ({d.state.value}) and no {args.want} within {wait:g}s: both the "
                   "receiver evidence and the answer are missing")
    if args.json:
        print(json.dumps({"relay_id": d.relay_id, "outcome": d.outcome, "state": d.state.value, "stage": d.stage,
                          "reason": d.reason, "target": d.target, "transport": d.transport,
                          "payload": d.plan.payload if d.plan else None,
                          "evidence": [e.model_dump(mode="json") for e in d.evidence],
                          "reply": _reply_json(answer) if answer is not None else None,
                          "missing": missing}))
    else:
        print(visible(d.summary()))
        if answer is not None:  # a peer's words: shown, never acted on by the terminal
            v = answer.verdict
            flag = consent_flag(answer.body)
            print(visible(f"reply {answer.relay_id or ''} from {answer.peer or '?'} [{v.verdict if v else 'no verdict'}"
                          f"{', pid ' + str(v.pid) if v and v.pid else ''}"
                          f"{', ' + v.session if v and v.session else ''}]: {answer.body}"))
            if flag:
                print(f"  FLAG: the reply {flag}")
    if missing:
        err(f"relay: {visible(missing)}")
    return code


def _reply_json(answer) -> dict:
    v = answer.verdict
    return {"relay_id": answer.relay_id, "answers": answer.answers, "line": answer.line, "body": answer.body,
            "hop": answer.hop, "peer": answer.peer,
            "verdict": v.model_dump(mode="json") if v is not None else None}
