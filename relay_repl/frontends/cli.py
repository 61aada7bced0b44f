"""`relay` command line: the REPL by default, one-liners as subcommands.

Thin on purpose: every subcommand calls the same session object the REPL
holds. Imports are deferred so `relay --help` and the REPL start fast.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from relay_repl import __version__
from relay_repl.core.controls import visible  # pure, no dependency: every echo of a peer's text passes it
from relay_repl.core.peertext import consent_flag

DESCRIPTION = """\
Relay one-line messages between live AI coding-agent sessions (Claude Code,
Codex) on this machine, safely and verifiably.

With no subcommand, `relay` opens an async Python REPL with `session`
preloaded. Every side effect (a keystroke, a socket write, a queue insert)
first prints a four-part plan — target, transport and fallback, exact payload,
what counts as delivered — and waits for y/N: only y then Enter, typed after the
plan was shown, approves. No means nothing happens; with no terminal the answer is No.
"""

EPILOG = """\
examples:
  relay                         open the REPL on the agents running on this machine
  relay --lab                   start what is missing of the offline lab and open the REPL on it
  relay targets                 list live (and stale) Claude Code and Codex sessions
  relay send codex:fix-tests 'please rerun the suite' --want reply
  relay --lab targets --json    any subcommand, pointed at the lab as it is (never restarts it)
  relay lab up / status / down  manage the offline lab
  relay --fake                  the REPL with an in-memory demo target (fake:inbox)
  relay log                     the newest events in the ledger
  relay why operator.host.42-3  every event recorded for one relay id
  relay verify ID --in claude:alpha   who really sent relay id ID (the receiver's origin records)
  relay recipes                 saved multi-round exchanges; `relay run NAME -p KEY=VALUE`
  relay why run-1a2b3c4d        a recipe run's whole timeline
  relay clean                   remove what a crashed relay REPL left (only files it provably created)

State (ledger, history, lab) lives in $RELAY_HOME, else $XDG_STATE_HOME/relay-repl.
"""


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="relay", description=DESCRIPTION, epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--version", action="version", version=f"relay {__version__}")
    p.add_argument("--fake", action="store_true", help="add the in-memory demo target fake:inbox (no agent needed)")
    p.add_argument("--lab", action="store_true",
                   help="point the command at the offline lab as it is (a dead lab session shows as stale); with no command "
                        "(the REPL) first start what is missing of the lab")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    s = sub.add_parser("repl", help="open the REPL (the default)", description="Open the async REPL with `session` preloaded.")
    s.set_defaults(func=_cmd_repl)

    s = sub.add_parser(
        "targets",
        help="list discovered sessions",
        description="List every Claude Code and Codex session found in their own registries: live ones with their "
        "state, pane and possible transports, stale ones marked STALE (never used).",
    )
    s.add_argument("--json", action="store_true", help="a JSON array: kind, name, address, pid, live, state, pane, transports, ...")
    s.set_defaults(func=_cmd_targets)

    s = sub.add_parser(
        "send",
        help="send one line to a target (plan, y/N, deliver, confirm)",
        description="Send MESSAGE to TARGET (claude:NAME, codex:NAME-or-UUID, or %%PANE). The plan is shown and "
        "you are asked y/N first; without a terminal the answer is No. A whole pasted envelope line as MESSAGE is "
        "forwarded instead (same id, hop + 1, the envelope's own want; --transport, --durable and --native-reply "
        "apply; a duplicate id is dropped, and the id counts as seen only once you answered y).\n\n"
        "With --want reply|ack the command keeps its own inbox open and waits (--wait SECONDS) for the answer, "
        "linked by its re= header and verified by the kernel pid of the process that sent it; a Claude target "
        "answers with SendMessage, so the inbox is listed as a Claude peer for that long (asked y/N first).\n\n"
        "exit codes: 0 delivered (receiver evidence) and, with --want, answered; 3 pending (the stage it stopped "
        "at is printed) or no answer within --wait; 1 refused, failed or halted (relay-halt), 2 usage error",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    s.add_argument("target")
    s.add_argument("message", help="one line; quote it")
    s.add_argument("--transport", "-t", help="require this transport (codex-queue, claude-code-socket, claude-code-message, tmux)")
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
    s.set_defaults(func=_cmd_send)

    lab = sub.add_parser(
        "lab",
        help="the offline lab: real Claude Code and Codex against stub models",
        description="Run the REAL pinned Claude Code and Codex CLIs in a private tmux server against stub model "
        "servers on 127.0.0.1, with isolated homes, so every part of relay can be tried with no accounts.",
    )
    lsub = lab.add_subparsers(dest="lab_command", metavar="LABCOMMAND", required=True)
    x = lsub.add_parser("install", help="install the pinned clients (or other versions) from the npm registry",
                        description="Install the pinned Claude Code and Codex into the client cache (skips what is "
                        "present). With --claude/--codex VERSION (or `latest`), install that set into its own "
                        "cache beside the pinned one; run it with `relay lab up --clients DIR` and check it with "
                        "`relay fidelity --clients DIR`.")
    x.add_argument("--claude", metavar="VERSION", help="Claude Code version (x.y.z or latest; default: pinned)")
    x.add_argument("--codex", metavar="VERSION", help="Codex version (x.y.z or latest; default: pinned)")
    x.set_defaults(func=_cmd_lab_install)
    x = lsub.add_parser("up", help="start what is missing of the lab and wait until every session is idle",
                        description="Start the lab, or only its dead sessions if it runs (live sessions are never "
                        "replaced); wait until every session is idle. For a fresh lab: `relay lab down`, then "
                        "`relay lab up`. Progress goes to stderr.")
    x.add_argument("--claude", type=int, default=1, help="Claude Code sessions (default 1)")
    x.add_argument("--codex", type=int, default=1, help="Codex sessions (default 1)")
    x.add_argument("--clients", default="pinned", metavar="SET",
                   help="which clients the lab runs: pinned (default), latest (from npm), system (the claude and "
                        "codex on your PATH), or an npm prefix from `relay lab install --claude V --codex V`; "
                        "a running lab keeps its clients (`relay lab down` first)")
    x.add_argument("--hosts", type=int, default=1, choices=(1, 2),
                   help="2: also a second lab host (its own network namespace, sshd and sessions), reached as h2/...")
    x.set_defaults(func=_cmd_lab_up)
    x = lsub.add_parser("status", help="what runs in the lab")
    x.add_argument("--json", action="store_true", help="lab directory, tmux socket, and per session kind, name, pid, pane, transcript")
    x.set_defaults(func=_cmd_lab_status)
    x = lsub.add_parser("down", help="stop everything the lab started and remove its sockets and registry files")
    x.set_defaults(func=_cmd_lab_down)
    x = lsub.add_parser("env", help="print shell exports that point other tools (and plain relay) at the lab")
    x.set_defaults(func=_cmd_lab_env)
    x = lsub.add_parser("attach", help="attach your terminal to one lab session's tmux window")
    x.add_argument("name")
    x.set_defaults(func=_cmd_lab_attach)

    s = sub.add_parser(
        "fidelity",
        help="check every client fact relay depends on against a client set; verify its versions here",
        description="Run the live checks (discovery, socket and queue wire formats, rollout and transcript "
        "records, daemon status, every screen class, busy submit rules, zero-key preflight refusals) against "
        "Claude Code and Codex in private labs, print one row per fact (✔/✘ with evidence) and record fresh "
        "screen captures beside the golden ones. When every fact holds for a client, its version is recorded "
        "as verified on this machine and relay's refusals for it lift. Needs a source checkout. Exit 0 all "
        "hold, 1 some failed.",
    )
    s.add_argument("--clients", default="pinned", metavar="SET",
                   help="pinned (default), latest (npm's newest, installed beside the pinned), system (the "
                        "claude and codex on your PATH) or an npm prefix directory")
    s.add_argument("--json", action="store_true", help="the report as JSON (progress on stderr)")
    s.add_argument("--no-screens", action="store_true", help="skip the screen recorder (faster; then no "
                   "screen facts are checked and nothing is recorded as verified for the tmux path)")
    s.set_defaults(func=_cmd_fidelity)

    s = sub.add_parser(
        "recipes",
        help="list the saved recipes (or print their JSON Schema)",
        description="List the recipes found in ./recipes/, the ones shipped with relay, and $RELAY_HOME/recipes/, "
        "with their descriptions and parameters. `relay recipes schema` prints the JSON Schema of the format.",
    )
    s.add_argument("what", nargs="?", choices=["list", "schema"], default="list", help="list (default) or schema")
    s.add_argument("--json", action="store_true", help="machine-readable list")
    s.set_defaults(func=_cmd_recipes)

    s = sub.add_parser(
        "run",
        help="run a saved recipe (every send planned and gated)",
        description="Run a recipe: NAME (see `relay recipes`) or FILE.toml. Each send shows its plan headed with "
        "where the run stands (recipe, run id, round, step) and asks y/N; No stops the run, resumable with "
        "--resume RUN_ID. Hop is reset to 0 at the start of each round, never otherwise.\n\n"
        "examples:\n"
        "  relay run ping -p target=claude:alpha\n"
        "  relay run five-rounds -p a=claude:alpha -p b=codex:beta --dry-run\n"
        "  relay run --resume run-1a2b3c4d\n\n"
        "exit codes: 0 finished, 1 stopped (No, timeout, halt, hop cap, failure), 2 usage error "
        "(bad recipe file, unknown parameter or target)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    s.add_argument("recipe", nargs="?", help="a recipe name or a .toml file")
    s.add_argument("-p", "--param", action="append", default=[], metavar="KEY=VALUE", help="set a parameter (repeatable)")
    s.add_argument("--dry-run", action="store_true", help="print every plan the run would show, with its hops; send nothing")
    s.add_argument("--resume", metavar="RUN_ID", help="continue a stopped run; confirmed steps are never sent again")
    s.add_argument("--json", action="store_true", help="print the run (rounds, steps, states, replies) as JSON at the end")
    s.set_defaults(func=_cmd_run)

    s = sub.add_parser(
        "log",
        help="show the newest ledger events",
        description="Show the newest events of the append-only event log (plans, answers, stages, outcomes).",
    )
    s.add_argument("-n", type=int, default=20, help="how many events (default 20)")
    s.add_argument("--json", action="store_true", help="one JSON object per line")
    s.set_defaults(func=_cmd_log)

    s = sub.add_parser(
        "why",
        help="explain one relay id (or a recipe run id)",
        description="Every event the ledger holds for one relay id, oldest first: the plan shown, the answer, "
        "each stage's evidence and the outcome. Given a recipe run id (run-...), the run's whole timeline: its "
        "steps, and every event of every relay id it sent.",
    )
    s.add_argument("relay_id")
    s.add_argument("--json", action="store_true", help="one JSON object per line")
    s.set_defaults(func=_cmd_why)

    s = sub.add_parser(
        "verify",
        help="audit who really sent a relay id (origin records in a Claude transcript)",
        description="Audit who really sent a message. Finds the transcript records whose envelope header has exactly "
        "id=RELAY_ID (never a substring: id=1 does not match id=10 nor a body quoting it), reading both "
        "`.origin` and `.attachment.origin`, prints the content beside each origin record, and judges the "
        "kernel-supplied verifiedPeerPid against the registry: a genuine Claude session owns a live <pid>.sock; "
        "the operator's relay is the pid its ledger wrote that msg_id from; anything else is an unknown process "
        "(an injector) or a mismatch with what the envelope claims. hopChain is shown as corroboration only. "
        "More than one record is reported as a non-unique id, never resolved by guessing. A Codex target keeps "
        "no provenance: what is known (turn trigger, queue client_id) is shown. Read-only; streams the file.\n\n"
        "examples:\n"
        "  relay --lab verify operator.vm.4242-1 --in claude:alpha\n"
        "  relay verify alpha-7 --transcript ~/.claude/projects/-home-me-proj/<session-id>.jsonl --json\n\n"
        "exit codes: 0 verified, 1 none found, 4 ambiguous (non-unique id), mismatch or not verifiable "
        "(unknown process, Codex), 2 usage error",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    s.add_argument("relay_id", help="the id= value, exactly")
    where = s.add_mutually_exclusive_group()
    where.add_argument("--in", dest="target", metavar="TARGET",
                       help="a discovered target (claude:NAME, codex:NAME); default: every live Claude target")
    where.add_argument("--transcript", metavar="FILE", help="any Claude transcript .jsonl file (audit after the fact)")
    s.add_argument("--json", action="store_true", help="the report as one JSON object (verdict, records with path, "
                   "content, origin, verdict)")
    s.set_defaults(func=_cmd_verify)

    s = sub.add_parser(
        "doctor",
        help="check every layer relay relies on; say what to do about each failure",
        description="Check, read-only, each layer relay stands on and print ✔ or ✘ with the next step: tmux and its "
        "version; each client (claude, codex) found, its version, and whether that version is verified; Claude's "
        "config dir and registry, `claude agents --json`; CODEX_HOME, session_index.jsonl, queue_1.sqlite, the "
        "Codex daemon; whether a Codex agent's sandbox lets it run `relay reply`; the state directory; the "
        "ledger's integrity; relay-halts in force.\n\nexit codes: 0 all checks pass, 1 otherwise",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    s.add_argument("--json", action="store_true", help='{"ok": bool, "checks": [{"name", "ok", "detail", "fix"}]}')
    s.set_defaults(func=_cmd_doctor)

    s = sub.add_parser(
        "debug",
        help="debug one delivery: look at the receiver, step, resume, abandon",
        description="Debug one delivery from any earlier process (a `relay send` that exited 3, a REPL send), named "
        "by its relay id or delivery key. Prints the stages done and the one next, then a small loop:\n"
        "  look            read the receiver now (pane and screen verdict, queue row, transcript records); sends nothing\n"
        "  step            run exactly the next stage; a key press or write shows its plan and asks y/N first\n"
        "  resume          run the remaining stages, each gated the same way\n"
        "  abandon REASON  record that you gave up on it (nothing is sent or removed)\n"
        "  quit\n\n"
        "exit codes: 0 delivered, 3 still pending, 1 receiver gone / refused / failed / abandoned",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    s.add_argument("id", help="a relay id (as printed in the plan) or a delivery key")
    s.add_argument("--look", action="store_true", help="look once (read-only) and exit, no loop")
    s.add_argument("--json", action="store_true", help="with --look: the delivery and the look as one JSON object")
    s.set_defaults(func=_cmd_debug)

    s = sub.add_parser(
        "whoami",
        help="show your own address: what a peer needs to answer you",
        description="Your own address, the thing a peer needs to answer you: $CODEX_THREAD_ID inside Codex, the "
        "session name inside Claude Code, otherwise the operator's address and any running relay inboxes.",
    )
    s.add_argument("--json", action="store_true", help="machine-readable output")
    s.set_defaults(func=_cmd_whoami)

    s = sub.add_parser(
        "clean",
        help="remove what a crashed relay REPL left behind",
        description="Remove the inbox socket and Claude registry entry a killed relay REPL left behind. Only files "
        "this program provably created are removed (same inode and bytes as written, naming the crashed process's "
        "pid and start time); anything else is left and named. Each removal is printed on stderr. The REPL's "
        "start and `relay send` do the same; read-only commands (targets, whoami, log, why) never remove anything.",
    )
    s.set_defaults(func=_cmd_clean)

    s = sub.add_parser(
        "reply",
        help="answer a relay message into the operator's inbox",
        description="Answer the relay message whose id you were given, into the inbox of the relay REPL that sent it. "
        "This is how a Codex agent (which cannot send natively) replies: run it as one command, e.g.\n"
        "  relay reply 'root.host.4242-3' 'tests pass on main'\n"
        "Only ids the operator sent are accepted; the reply carries hop+1 and stops at the hop cap.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    s.add_argument("relay_id", help="the id= value of the message you are answering")
    s.add_argument("text", nargs="+", help="the reply, one line")
    s.set_defaults(func=_cmd_reply)

    nb = sub.add_parser(
        "notebook",
        help="run a notebook (a .py file of `# %%%%` cells) against the session, outputs kept beside it",
        description="A notebook is a plain Python file in the jupytext percent format (`# %% title` starts a code "
        "cell, `# %% [markdown]` a prose cell). Its cells run top to bottom in one namespace holding `session` and "
        "`anyio`, with top-level await; every send shows its plan and asks y/N, headed with the notebook, run and "
        "cell. Outputs go to <stem>.relay/<run id>/ (cells.jsonl, report.md), never into the file.\n\n"
        "exit codes: 0 every cell ran, 1 a cell raised (later cells not run), 2 a syntax error or a bad -p, "
        "before any cell runs; 130 Ctrl-C (resumable with --resume)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    nsub = nb.add_subparsers(dest="notebook_command", metavar="NBCOMMAND", required=True)
    x = nsub.add_parser("run", help="run a notebook's cells", description="Run a notebook's cells top to bottom.")
    x.add_argument("file", help="the notebook, FILE.py")
    x.add_argument("-p", dest="param", action="append", default=[], metavar="KEY=VALUE",
                   help="a parameter (the cell tagged parameters holds the defaults; the value is typed by the default)")
    x.add_argument("--dry-run", action="store_true", help="show every send's plan, send nothing")
    x.add_argument("--resume", metavar="RUN", help="continue a stopped run: sends it made are answered from the ledger")
    x.add_argument("--json", action="store_true", help="the run as JSON on stdout (cell output and plans on stderr)")
    x.set_defaults(func=_cmd_notebook_run)
    x = nsub.add_parser("show", help="print a run's report (the newest by default)",
                        description="Print the report.md of the newest (or the named) run of a notebook.")
    x.add_argument("file", help="the notebook, FILE.py")
    x.add_argument("run", nargs="?", help="a run id (default: the newest)")
    x.add_argument("--json", action="store_true", help="the run (run.json) instead of the report")
    x.set_defaults(func=_cmd_notebook_show)
    x = nsub.add_parser("export", help="write a run as a Jupyter .ipynb (for reading: no kernel is named)",
                        description="Write the cells and a run's outputs (the newest by default) as an nbformat-4 "
                        "notebook, to read in Jupyter, JupyterLab or on a code host. Needs nbformat.")
    x.add_argument("file", help="the notebook, FILE.py")
    x.add_argument("run", nargs="?", help="a run id (default: the newest)")
    x.add_argument("--ipynb", required=True, metavar="OUT.ipynb", help="where to write it")
    x.set_defaults(func=_cmd_notebook_export)

    s = sub.add_parser(
        "mcp",
        help="run the relay MCP server on stdio (how a sandboxed agent replies)",
        description="Run a stdio MCP server with two tools: relay_reply (relay_id, text), which does what "
        "`relay reply` does, and relay_requests, which lists the open requests (read-only). Codex and Claude "
        "Code start MCP servers outside their sandbox, so this works under Codex's workspace-write sandbox, "
        "where `relay reply` cannot reach the inbox socket. Add it once:\n"
        "  ~/.codex/config.toml:   [mcp_servers.relay]\n"
        "                          command = \"relay\"\n"
        "                          args = [\"mcp\"]\n"
        "  Claude Code:            claude mcp add relay -- relay mcp\n"
        "It is started by the agent, not by you: run by hand it waits for MCP JSON-RPC on stdin.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    s.set_defaults(func=_cmd_mcp)
    from relay_repl.frontends import hosts_cmd

    hosts_cmd.register(sub)
    return p


def _cmd_targets(args: argparse.Namespace) -> int:
    import relay_repl.system.prefetch as prefetch

    prefetch.start()  # the listing runs while the imports below happen
    import anyio
    import json

    from relay_repl.agents import default_providers
    from relay_repl.agents.discovery import Provider, StaticProvider, discover_all

    from relay_repl.store.hosts import load_hosts

    problems: list[str] = []

    async def run() -> list:
        # the providers alone: listing needs no gate, transports or ledger (what Session.refresh runs)
        providers: list[Provider] = list(default_providers())
        if args.fake:
            from relay_repl.transports.fake import fake_target

            providers.append(StaticProvider("fake", [fake_target()]))
        if not load_hosts():
            return await discover_all(providers)
        from relay_repl.session.remote import Hosts

        hosts = Hosts()
        try:  # each host's relay lists its own, at the same time as the local listing
            local, (remote, probs) = await _both(discover_all(providers), hosts.all_targets())
        finally:
            await hosts.aclose()
        problems.extend(probs)
        return [*local, *remote]

    targets = anyio.run(run)
    from relay_repl.frontends.hosts_cmd import print_problems

    print_problems(problems)  # a down host: one line on stderr; the others are listed
    if args.json:
        print(json.dumps([_target_json(t) for t in targets], indent=1))
        return 0
    from relay_repl.core.target import format_targets

    print(format_targets(targets))
    return 0


async def _both(a, b):
    import anyio

    out: list = [None, None]

    async def one(i, aw):
        out[i] = await aw

    async with anyio.create_task_group() as tg:
        tg.start_soon(one, 0, a)
        tg.start_soon(one, 1, b)
    return out[0], out[1]


def _fast_exit(code: int) -> None:
    """Leave without interpreter teardown (~20 ms of module finalisation, measured).

    Only for read-only commands that hold nothing needing cleanup: `relay targets`
    is a cold start benchmarked against `claude agents --json` itself."""
    import os

    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _target_json(t) -> dict:
    return {
        "kind": t.kind, "name": t.name, "spec": t.spec, "address": t.address, "pid": t.pid, "live": t.live,
        "state": t.state, "pane": t.pane, "transports": list(t.transports), "identified_by": t.identified_by,
        "client_version": t.client_version, "client_status": t.client_status,
        "detail": t.detail, "host": t.host,
    }


def _cmd_send(args: argparse.Namespace) -> int:
    import anyio
    import json

    from relay_repl.core.envelope import Envelope
    from relay_repl.core.errors import UsageError
    from relay_repl.session.app import make_session

    wants_answer = args.want not in (None, "none")  # None: not given (a forward keeps the envelope's own)
    if args.reply_via is not None and not wants_answer:
        raise UsageError("--reply-via names how an answer comes back: add --want reply (or --want ack)")
    if args.wait is not None and not wants_answer:
        raise UsageError("--wait waits for an answer: add --want reply (or --want ack)")
    if args.wait is not None and args.wait <= 0:
        raise UsageError(f"--wait {args.wait:g}: give a number of seconds above 0")
    wait = args.wait if args.wait is not None else 60.0

    def err(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    out = err if args.json else print  # --json: stdout holds the JSON only
    answer = None

    gate = None
    if args.json:  # the plan and the y/N prompt (on the terminal) go to stderr as well
        from prompt_toolkit.output import create_output

        from relay_repl.session.gate import TerminalGate

        gate = TerminalGate(output=create_output(stdout=sys.stderr), write=err,
                            isatty=lambda: sys.stdin.isatty() and sys.stderr.isatty())

    from relay_repl.frontends import hosts_cmd

    if hosts_cmd.names_a_host(args.target):  # HOST/kind:name: planned and carried out by that host's relay
        return hosts_cmd.send_to_host(args, gate, out, err, wait, wants_answer)

    async def run():
        nonlocal answer, wants_answer
        session = make_session(fake=args.fake, interrupt=args.interrupt, approve=gate, echo=out)
        async with _inbox_open(session, out):
            if Envelope.parse(args.message) is not None:
                wants_answer = False  # the answer to a forward goes to its original sender, not here
                return await session.forward(args.target, args.message, transport=args.transport,
                                             durable=args.durable, native_reply=args.native_reply, want=args.want,
                                             timeout=args.timeout)
            d = await session.send(args.target, args.message, want=args.want or "none", transport=args.transport,
                                   durable=args.durable, native_reply=args.native_reply, timeout=args.timeout,
                                   reply_via=args.reply_via if wants_answer else None)
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

def _cmd_doctor(args: argparse.Namespace) -> int:
    import anyio
    import json

    from relay_repl.session.doctor import run_checks

    report = anyio.run(run_checks)
    if args.json:
        print(json.dumps({"ok": report.ok, "checks": [c.model_dump() for c in report]}, ensure_ascii=False))
    else:
        print(repr(report))
    return 0 if report.ok else 1


def _look_json(dbg, lk) -> dict:
    d = dbg.delivery
    return {"key": d.key, "relay_id": d.relay_id, "target": d.target, "transport": d.transport,
            "outcome": d.outcome, "state": d.state.value, "stage": d.stage, "reason": d.reason,
            "next": dbg.next_stage or None, "payload": d.plan.payload if d.plan else None,
            "stages": [e.model_dump(mode="json", include={"stage", "state", "detail", "at"}) for e in d.evidence],
            "look": lk.model_dump(mode="json")}


DEBUG_HELP = "commands: look, step, resume, abandon [reason], show, quit"


def _cmd_debug(args: argparse.Namespace) -> int:
    import anyio
    import json

    from relay_repl.session.app import make_session

    say = (lambda s: print(s, file=sys.stderr, flush=True)) if args.json else (lambda s: print(s, flush=True))

    async def read_command(ask) -> str | None:
        if ask is not None:
            try:
                return await ask.prompt_async()
            except (EOFError, KeyboardInterrupt):
                return None
        line = await anyio.to_thread.run_sync(sys.stdin.readline)
        return line if line else None

    import relay_repl.store.paths as paths
    from relay_repl.core.errors import RelayError

    ledger = paths.state_dir(create=False) / "ledger.sqlite"
    if not ledger.exists():  # debugging reads the ledger; it never creates one
        raise RelayError(f"no ledger at {ledger}: nothing was ever sent from here (set RELAY_HOME, or use --lab)")

    async def run() -> int:
        from relay_repl.store.ledger import Ledger

        # --look only reads: a read-only ledger, and the look is not recorded
        session = make_session(fake=args.fake, echo=say, ledger=Ledger.read_only_at(ledger) if args.look else None)
        dbg = session.debugger(args.id)
        if args.look:
            lk = await dbg.look(record=False)
            if args.json:
                print(json.dumps(_look_json(dbg, lk), ensure_ascii=False, default=str))
            else:
                print(dbg.table())
                print(visible(lk.render(), keep_newlines=True))
            return 1 if lk.receiver == "gone" else 0
        print(dbg.table())
        print(DEBUG_HELP)
        ask: Any = None  # a PromptSession when a terminal asks, else commands come from stdin
        if sys.stdin.isatty() and sys.stdout.isatty():
            from prompt_toolkit import PromptSession
            from prompt_toolkit.completion import WordCompleter

            ask = PromptSession("debug> ", completer=WordCompleter(["look", "step", "resume", "abandon", "show", "quit"]))
        gone = False
        while True:
            line = await read_command(ask)
            if line is None:
                break
            word, _, rest = line.strip().partition(" ")
            if word in ("q", "quit", "exit"):
                break
            if word in ("l", "look"):
                lk = await dbg.look()
                gone = lk.receiver == "gone"
                print(visible(lk.render(), keep_newlines=True), flush=True)
            elif word in ("s", "step"):
                await dbg.step()
                print(f"now: {dbg.delivery.summary()}", flush=True)
            elif word in ("r", "resume"):
                await dbg.resume()
            elif word in ("a", "abandon"):
                dbg.abandon(rest.strip() or "abandoned by the operator")
                print(f"now: {dbg.delivery.summary()}", flush=True)
            elif word in ("show", "t", "table"):
                print(dbg.table(), flush=True)
            elif word:
                print(f"unknown command {word!r}; {DEBUG_HELP}", flush=True)
        return 1 if gone else dbg.delivery.exit_code

    return anyio.run(run)


def _cmd_lab_install(args: argparse.Namespace) -> int:
    from relay_repl.lab.install import VERIFIED_VERSIONS, install, install_versions, latest_versions

    if not args.claude and not args.codex:
        install(progress=_progress)
        return 0
    want = dict(VERIFIED_VERSIONS)
    latest = latest_versions() if "latest" in (args.claude, args.codex) else {}
    for kind, v in (("claude-code", args.claude), ("codex", args.codex)):
        if v:
            want[kind] = latest[kind] if v == "latest" else v
    prefix = install_versions(want, progress=_progress)
    print(f"claude-code {want['claude-code']} and codex {want['codex']} in {prefix}")
    print(f"next: `relay fidelity --clients {prefix}` checks them; `relay lab up --clients {prefix}` runs them")
    return 0


def _cmd_fidelity(args: argparse.Namespace) -> int:
    from relay_repl.lab.fidelity import run

    report = run(args.clients, progress=_progress, screens=not args.no_screens)
    if args.json:
        print(report.model_dump_json(indent=2))
    else:
        print(report.table())
    return 0 if report.ok else 1


def _cmd_lab_up(args: argparse.Namespace) -> int:
    from relay_repl.lab.install import resolve_clients, set_root
    from relay_repl.lab.launcher import ensure_lab

    if args.clients != "pinned":
        prefix, got = resolve_clients(args.clients, progress=_progress)
        set_root(prefix)
        _progress(f"lab clients: claude-code {got['claude-code']}, codex {got['codex']} from {prefix}")
    state = ensure_lab(claude=args.claude, codex=args.codex, progress=_progress)
    print(f"lab ready: {state.lab_dir} (tmux -L {state.tmux_socket})")
    print("\n".join(state.targets()))
    if args.hosts == 2:
        from relay_repl.lab import second_host
        from relay_repl.lab.launcher import layout

        h2 = second_host.up(layout(), claude=args.claude, codex=args.codex, progress=_progress)
        print(f"second host {h2.name}: ssh {h2.address} (host key {h2.host_key_sha256}); its sessions are {h2.name}/...")
    print("next: `relay --lab` opens the REPL on it; `relay lab env` points other tools at it")
    return 0


def _cmd_lab_status(args: argparse.Namespace) -> int:
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


def _cmd_lab_down(args: argparse.Namespace) -> int:
    from relay_repl.lab.launcher import down

    down(progress=_progress)
    return 0


def _cmd_lab_env(args: argparse.Namespace) -> int:
    import shlex

    from relay_repl.lab.launcher import env

    for k, v in env().items():
        print(f"export {k}={shlex.quote(v)}")
    return 0


def _cmd_lab_attach(args: argparse.Namespace) -> int:
    from relay_repl.lab.launcher import attach

    attach(args.name)
    return 0


def _progress(line: str) -> None:
    """Progress goes to stderr, always: stdout is the command's answer (`--json` stays JSON)."""
    print(line, file=sys.stderr, flush=True)


def _use_lab(start: bool) -> None:
    """Point this process's environment at the lab; with `start`, first start what is missing.

    Only the REPL's start (`relay --lab`, `relay --lab repl`) starts anything, and then only
    the parts that are missing (launcher.ensure_lab never replaces a live session). Any other
    command uses the lab as it is: a dead session shows as stale, no lab shows as no targets,
    and a note on stderr says so."""
    import os

    from relay_repl.lab.launcher import ensure_lab, env, status

    if start:
        ensure_lab(progress=_progress)
    else:
        st = status()
        if st is None:
            _progress("relay: no lab running (`relay lab up` starts one); using its empty directories")
        else:
            dead = [s.name for s in st.sessions if not s.alive]
            if dead:
                _progress(f"relay: lab session(s) {', '.join(dead)} not running (left as they are; "
                          "`relay lab up` restarts only those)")
    os.environ.update(env())


def _cmd_clean(args: argparse.Namespace) -> int:
    """Remove what a killed relay REPL left (its socket, its entry in Claude's registry): files in
    other programs' directories only after their plan is shown and approved (on stderr)."""
    import anyio

    from relay_repl.session.gate import TerminalGate
    from relay_repl.session.session import Session
    from relay_repl.store.ledger import Ledger

    say = lambda s: print(s, file=sys.stderr, flush=True)  # noqa: E731 - stdout stays empty
    io: dict = {}
    if sys.stdin.isatty() and sys.stderr.isatty():
        from prompt_toolkit.output import create_output

        io["output"] = create_output(stdout=sys.stderr)
    gate = TerminalGate(write=say, isatty=lambda: sys.stdin.isatty() and sys.stderr.isatty(), **io)
    session = Session(ledger=Ledger.default(), approve=gate, echo=say)
    removed = anyio.run(session.clean, lambda line: say(f"relay: {line}"))
    if not removed:
        print("relay: nothing to clean: no inbox record of a crashed relay", file=sys.stderr)
    return 0


def _cmd_whoami(args: argparse.Namespace) -> int:
    import json

    from relay_repl.session.inbox import read_records
    from relay_repl.session.whoami import own_address

    me = own_address()
    inboxes = [r.model_dump() for r in read_records() if r.live]
    if args.json:
        print(json.dumps({"role": me.role, "agent": me.agent, "address": me.address, "sender": me.sender,
                          "inbox": me.inbox, "relay_inboxes": inboxes}))
    else:
        print(f"{me.sender}" + (f"  inbox {me.inbox}" if me.inbox else ""))
        for r in inboxes:
            print(f"  relay inbox: pid {r['pid']} {r['sender']} at {r['socket']}")
        if not inboxes and me.agent == "relay":
            print("  no relay REPL inbox is running: start `relay` to receive replies")
    return 0


def _cmd_reply(args: argparse.Namespace) -> int:
    from relay_repl.session.reply import reply

    env, path = reply(args.relay_id, " ".join(args.text))
    print(f"replied to {args.relay_id} as {env.id} (hop {env.hop}) into {path}")
    return 0


def _cmd_verify(args: argparse.Namespace) -> int:
    """Read-only: a transcript file needs no discovery; a target (or none) does."""
    from relay_repl.session import verify as v
    from relay_repl.store.ledger import Ledger

    ledger = Ledger.read_only_default()  # read-only: never creates, changes or deletes a file
    if args.transcript is not None:
        report = v.verify_file(args.relay_id, args.transcript, ledger)
    else:
        import anyio

        from relay_repl.session.app import make_session

        from relay_repl.core.errors import DiscoveryError

        session = make_session(fake=args.fake, ledger=ledger)
        try:
            report = anyio.run(lambda: session.verify(args.relay_id, args.target))
        except DiscoveryError as exc:  # exit 1 means "none found" here: a bad target is a usage error
            print(f"relay: {exc}", file=sys.stderr)
            return 2
    try:
        print(report.model_dump_json(indent=1) if args.json else report.render())
        sys.stdout.flush()
    except BrokenPipeError:  # `relay verify ... | head`: the reader left; the verdict is the exit code
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return report.exit_code


def _cmd_mcp(args: argparse.Namespace) -> int:
    from relay_repl.session.mcp_server import serve

    if sys.stdin.isatty():
        print("relay mcp: an MCP server on stdio, started by an agent (see `relay mcp --help` for the config "
              "lines); waiting for JSON-RPC on stdin, Ctrl-D ends it", file=sys.stderr)
    return serve()


def _cmd_repl(args: argparse.Namespace) -> int:
    from relay_repl.frontends.repl import run

    return run(fake=args.fake)


def _event_text(e) -> str:
    d = e.data
    if e.kind == "run-start":
        return f"recipe {d.get('recipe')} params {d.get('params')}"
    if e.kind == "run-step":
        return f"round {d.get('round')} step {d.get('step')}: {d.get('kind')} {d.get('target')} as {d.get('relay_id')} hop {d.get('hop')}"
    if e.kind == "run-answer":
        a = d.get("answer") or {}
        return f"round {d.get('round')} step {d.get('step')}: {a.get('relay_id')} (hop {a.get('hop')}) answers {d.get('answers')}: {a.get('body')}"
    if e.kind == "run-end":
        return f"{d.get('state')}" + (f": {d.get('reason')}" if d.get("reason") else "")
    return str(d.get("detail") or d.get("state") or d.get("approved", ""))


def _print_events(events: list, as_json: bool) -> None:
    import json
    import time

    for e in events:
        if as_json:
            print(json.dumps(e.model_dump(), ensure_ascii=False))
        else:
            when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(e.at))
            data = _event_text(e)
            print(visible(f"{e.seq:>6} {when} {e.kind:<16} {e.relay_id or '-':<28} {data}"))  # data may be a peer's


def _cmd_log(args: argparse.Namespace) -> int:
    from relay_repl.store.ledger import Ledger

    led = Ledger.read_only_default()
    events = led.events()
    _print_events(events[-args.n :], args.json)
    return 0


def _cmd_recipes(args: argparse.Namespace) -> int:
    import json

    if args.what == "schema":
        from relay_repl.core.recipe import recipe_schema

        print(json.dumps(recipe_schema(), indent=1))
        return 0
    from relay_repl.core.errors import UsageError
    from relay_repl.core.recipe import RecipeError
    from relay_repl.session.recipes import list_notebooks, list_recipes

    found = list_recipes()
    notebooks = list_notebooks()
    if args.json:
        print(json.dumps([
            {"name": r.name, "kind": "recipe", "path": str(p), "description": r.description, "rounds": r.rounds,
             "until": r.until, "params": {k: v.model_dump() for k, v in r.params.items()}}
            if not isinstance(r, RecipeError) else {"name": p.stem, "kind": "recipe", "path": str(p), "error": str(r)}
            for p, r in found] + [
            {"name": p.stem, "kind": "notebook", "path": str(p), "title": nb.title, "params": nb.defaults()}
            if not isinstance(nb, UsageError) else {"name": p.stem, "kind": "notebook", "path": str(p), "error": str(nb)}
            for p, nb in notebooks], indent=1))
        return 0
    if notebooks:
        print("notebooks (`relay run NAME` or `relay notebook run FILE.py`):")
        for p, nb in notebooks:
            if isinstance(nb, UsageError):
                print(f"{p.stem:<14} BROKEN: {nb}")
                continue
            print(f"{p.stem:<14} {nb.title or '(untitled)'} [notebook, {len(nb.code_cells)} cells]")
            for k, v in nb.defaults().items():
                print(f"{'':<16}-p {k}=<{type(v).__name__}> (default {v!r})")
        if found:
            print("recipes:")
    if not found and not notebooks:
        print("no recipes found (put NAME.toml in ./recipes/ or $RELAY_HOME/recipes/)")
        return 0
    for p, r in found:
        if isinstance(r, RecipeError):
            print(f"{p.stem:<14} BROKEN: {r}")
            continue
        stop = f"{r.rounds} round{'s' if r.rounds > 1 else ''}" + (f" or until {r.until!r}" if r.until else "")
        print(f"{r.name:<14} {r.description} [{stop}]")
        for k, v in r.params.items():
            default = f" (default {v.default})" if v.default is not None else " (required)"
            print(f"{'':<16}-p {k}=<{v.type}>{default}{': ' + v.description if v.description else ''}")
    print("run one with `relay run NAME -p KEY=VALUE` (add --dry-run to see every plan first)")
    return 0


def _params(items: list[str]) -> dict[str, str]:
    """`-p KEY=VALUE` flags as a dict (typed later, by the recipe or the notebook)."""
    from relay_repl.core.errors import UsageError

    params: dict[str, str] = {}
    for item in items:
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise UsageError(f"-p {item!r} must be KEY=VALUE")
        params[key.strip()] = value
    return params


def _stderr_gate(say: Any) -> Any:
    """The terminal gate with its plans and y/N prompt on stderr, so stdout can carry JSON only."""
    from relay_repl.session.gate import TerminalGate

    io: dict = {}
    if sys.stdin.isatty() and sys.stderr.isatty():
        from prompt_toolkit.output import create_output

        io["output"] = create_output(stdout=sys.stderr)
    return TerminalGate(write=say, isatty=lambda: sys.stdin.isatty() and sys.stderr.isatty(), **io)


def _cmd_run(args: argparse.Namespace) -> int:
    import anyio

    from relay_repl.core.errors import UsageError
    from relay_repl.session.app import make_session

    if bool(args.recipe) == bool(args.resume):
        raise UsageError("name a recipe (relay run NAME) or a run to resume (relay run --resume RUN_ID), not both")
    if args.resume and (args.param or args.dry_run):
        raise UsageError("--resume takes no -p or --dry-run: a run resumes with the parameters it started with")
    params = _params(args.param)
    say = (lambda s: print(s, file=sys.stderr, flush=True)) if args.json else (lambda s: print(s, flush=True))

    approve = _stderr_gate(say) if args.json else None  # stdout carries only the run's JSON

    if args.recipe:
        from relay_repl.session.recipes import find_recipe

        if find_recipe(args.recipe).suffix == ".py":  # a notebook on the same shelf: the notebook runner runs it
            args.file, args.resume = str(find_recipe(args.recipe)), None
            return _cmd_notebook_run(args)

    async def go():
        session = make_session(fake=args.fake, echo=say, approve=approve)
        if args.recipe:  # a bad file or parameter is refused before the inbox opens
            from relay_repl.core.recipe import parse_recipe
            from relay_repl.session.recipes import find_recipe, read_source

            path = find_recipe(args.recipe)
            parse_recipe(read_source(path), str(path)).resolve_params(params)
        async with _inbox_open(session, say, listen=not args.dry_run):
            if args.resume:
                return await session.resume(args.resume)
            from relay_repl.session.recipes import run_recipe

            return await run_recipe(session, args.recipe, params, dry_run=args.dry_run, echo=say)

    run = anyio.run(go)
    if args.json:
        print(run.model_dump_json(indent=1))
    else:
        print(repr(run))
    return 0 if run.state in ("done", "planned") else 1



def _inbox_open(session: Any, echo: Any, *, listen: bool = True) -> Any:
    """`async with _inbox_open(session, say):` the session's inbox listening for the block (replies need
    somewhere to go; `listen=False` for a dry run, which opens nothing), closed after it even when cancelled."""
    from contextlib import asynccontextmanager

    import anyio

    @asynccontextmanager
    async def opened() -> Any:
        async with anyio.create_task_group() as tg:
            if listen:
                await session.open_inbox(tg, echo=echo)
            try:
                yield
            finally:
                await session.close_inbox()
                tg.cancel_scope.cancel()

    return opened()

def _cmd_notebook_run(args: argparse.Namespace) -> int:
    import anyio

    from relay_repl.core.errors import UsageError
    from relay_repl.session.app import make_session
    from relay_repl.session.notebook import read_notebook, run_notebook

    params = _params(args.param)
    if args.resume and args.dry_run:
        raise UsageError("--resume and --dry-run do not mix: a dry run sends nothing, so there is nothing to resume")
    read_notebook(Path(args.file))  # a syntax error is one line before anything else starts
    err = lambda s: print(s, file=sys.stderr, flush=True)  # noqa: E731
    say = err if args.json else (lambda s: print(s, flush=True))
    approve = _stderr_gate(say) if args.json else None  # stdout carries only the run's JSON

    async def go():
        from relay_repl.store.ledger import Ledger

        # a dry run sends nothing, so it only reads the ledger: no RELAY_HOME, no ledger file made (issue 18, 9)
        ledger = Ledger.read_only_default() if args.dry_run else None
        session = make_session(fake=args.fake, echo=say, approve=approve, ledger=ledger)
        async with _inbox_open(session, say, listen=not args.dry_run):
            return await run_notebook(session, args.file, params, dry_run=args.dry_run, resume=args.resume,
                                      say=say, progress=err, out=sys.stderr if args.json else None)

    run = anyio.run(go)
    if args.json:
        print(run.model_dump_json(indent=1))
    else:
        where = Path(args.file).with_name(Path(args.file).stem + ".relay") / run.id
        print(f"notebook {run.notebook} run {run.id}: {run.state}" + (f" ({run.reason})" if run.reason else "")
              + f"; report: {where / 'report.md'}")
    return run.exit_code


def _cmd_notebook_show(args: argparse.Namespace) -> int:
    from relay_repl.session.notebook import load_run

    run, where = load_run(Path(args.file), args.run)
    if args.json:
        print(run.model_dump_json(indent=1))
    else:
        print((where / "report.md").read_text(encoding="utf-8"), end="")
    return 0


def _cmd_notebook_export(args: argparse.Namespace) -> int:
    from relay_repl.session.notebook import export_ipynb

    out = export_ipynb(Path(args.file), args.run, Path(args.ipynb))
    print(f"wrote {out}")
    return 0


def _cmd_why(args: argparse.Namespace) -> int:
    from relay_repl.store.ledger import Ledger

    led = Ledger.read_only_default()
    events = led.events(relay_id=args.relay_id)
    if any(e.kind == "run-start" for e in events):  # a recipe run: its steps and every event of every id it sent
        ids = {e.data.get("relay_id") for e in events if e.kind == "run-step"}
        ids |= {(e.data.get("answer") or {}).get("relay_id") for e in events if e.kind == "run-answer"}
        for rid in sorted(i for i in ids if i):
            events += led.events(relay_id=rid)
        events.sort(key=lambda e: e.seq)
    if not events:
        print(f"relay: no events for relay id {args.relay_id!r}; `relay log` lists recent ones", file=sys.stderr)
        return 1
    _print_events(events, args.json)
    if not args.json:  # the answers beside the send (linked by their re= header), with their verdicts
        for m in led.inbox(answers=args.relay_id):
            print(visible(f"answer: inbox #{m.seq} {m.relay_id or ''} from {m.peer or '?'}: {m.body}"))
            print(visible(f"  verdict {m.verdict}") if m.verdict else "  verdict: none recorded")
            if consent_flag(m.body):
                print(f"  FLAG: the answer {consent_flag(m.body)}")
    return 0


def _first_relay_error(group: BaseExceptionGroup):
    from relay_repl.core.errors import RelayError

    for exc in group.exceptions:
        if isinstance(exc, RelayError):
            return exc
        if isinstance(exc, BaseExceptionGroup):
            found = _first_relay_error(exc)
            if found is not None:
                return found
    return None


def main(argv: list[str] | None = None) -> int:
    words = sys.argv[1:] if argv is None else argv
    nb_run = "notebook" in words[:3] and "run" in words[:4]  # a notebook's first cell needs the targets too
    if ("targets" in words[:3] or nb_run) and "--help" not in words and "-h" not in words:
        import relay_repl.system.prefetch as prefetch

        prefetch.start()  # before anything else: the listing overlaps parsing and imports
    parser = build_parser()
    args = parser.parse_args(argv)
    func = getattr(args, "func", _cmd_repl)
    from relay_repl.core.errors import RelayError

    try:
        if args.lab and not func.__name__.startswith("_cmd_lab_") and func is not _cmd_fidelity:  # `relay --lab lab ...` needs no pointing
            _use_lab(start=func is _cmd_repl)
        code = int(func(args) or 0)
        if func is _cmd_targets and argv is None:  # a real process, not a call from tests
            _fast_exit(code)
        return code
    except RelayError as exc:
        print(visible(f"relay: {exc}"), file=sys.stderr)  # a halt's reason names a peer's claim
        return exc.exit_code
    except BaseExceptionGroup as group:  # errors raised inside a task group
        inner = _first_relay_error(group)
        if inner is None:
            raise
        print(visible(f"relay: {inner}"), file=sys.stderr)
        return inner.exit_code
    except KeyboardInterrupt:
        print("relay: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
