"""`relay targets`: the sessions discovery finds, as a table or JSON; a cold start kept short."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from relay_repl.frontends.kind_words import KindsHelp


def register(sub: Any) -> None:
    """Add `relay targets` to the subparsers."""
    s = sub.add_parser(
        "targets",
        help="list discovered sessions",
        description="List every agent session ({kinds}) found where its client records it: live ones with their "
        "state, pane and possible transports, stale ones marked STALE (never used).",
        formatter_class=KindsHelp,
    )
    s.add_argument("--json", action="store_true", help="a JSON array: kind, name, address, pid, live, state, pane, transports, ...")
    s.set_defaults(func=cmd_targets, fast_exit=True)


def cmd_targets(args: argparse.Namespace) -> int:
    import relay_repl.system.prefetch as prefetch

    prefetch.start()  # the listing runs while the imports below happen
    from relay_repl.store.hosts_path import hosts_file

    if not args.fake and not os.path.lexists(hosts_file()):  # no hosts.toml: no hosts (store/hosts.load_hosts)
        # each kind's plain listing where it accepts what it reads exactly (no pydantic, no agent
        # modules: targets_plain.py), that kind's models where it does not; the same bytes either way
        from relay_repl.frontends import targets_plain

        found = targets_plain.listing()
        if found is not None:
            from relay_repl.core.target_row import format_targets as table

            print(targets_plain.listing_json(found) if args.json else table(found))
            return 0
    import json

    from relay_repl.agents import default_providers
    from relay_repl.store.hosts import load_hosts
    from relay_repl.agents.discovery import Provider, StaticProvider, discover_all

    problems: list[str] = []
    remote_hosts = bool(load_hosts())

    async def run() -> list:
        # the providers alone: listing needs no gate, transports or ledger (what Session.refresh runs)
        providers: list[Provider] = list(default_providers())
        if args.fake:
            from relay_repl.transports.fake import fake_target

            providers.append(StaticProvider("fake", [fake_target()]))
        if not remote_hosts:
            return await discover_all(providers)
        from relay_repl.session.remote.remote import Hosts

        hosts = Hosts()
        try:  # each host's relay lists its own, at the same time as the local listing
            local, (remote, probs) = await _both(discover_all(providers), hosts.all_targets())
        finally:
            await hosts.aclose()
        problems.extend(probs)
        return [*local, *remote]

    # No remote hosts: nothing to overlap on this thread, so no event loop either (its
    # imports were a quarter of the cold start's CPU; system/loopless.py).
    from relay_repl.system import loopless

    targets = _anyio_run(run) if remote_hosts else loopless.run(run)
    for p in problems:  # a down host: one line on stderr; the others are listed
        print(f"relay: {p}", file=sys.stderr, flush=True)
    if args.json:
        print(json.dumps([_target_json(t) for t in targets], indent=1))
        return 0
    from relay_repl.core.target import format_targets

    print(format_targets(targets))
    return 0


def _anyio_run(fn: Any) -> Any:
    import anyio

    return anyio.run(fn)


async def _both(a: Any, b: Any) -> tuple[Any, Any]:
    import anyio

    out: list = [None, None]

    async def one(i: int, aw: Any) -> None:
        out[i] = await aw

    async with anyio.create_task_group() as tg:
        tg.start_soon(one, 0, a)
        tg.start_soon(one, 1, b)
    return out[0], out[1]


def fast_exit(code: int) -> None:
    """Leave without interpreter teardown (~20 ms of module finalisation, measured).

    Only for read-only commands that hold nothing needing cleanup: `relay targets`
    is a cold start benchmarked against `claude agents --json` itself."""
    import os

    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _target_json(t) -> dict:
    from relay_repl.core.target_row import target_json

    return target_json(t, t.detail.model_dump(mode="json"))
