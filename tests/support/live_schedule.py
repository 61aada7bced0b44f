"""How the live half is spread over its two xdist workers: by module, as `--dist loadfile` does,
except that the modules sharing a lab are one unit (started once, on one worker), and the costly
units go first, so both workers finish together.

Why not `--dist loadgroup` with `xdist_group` marks: pytest-xdist 3.8 marks a group by rewriting
`item._nodeid`, which pytest 9 no longer reads (nodeid is derived from `item._id`), so the marks are
silently ignored. Why not plain loadfile: it starts a shared lab on each worker that runs one of its
modules (the 2x2 lab twice), tears the package-scoped hosts lab down whenever a worker runs a module
of another package between two host modules (then starts it again, 16 s), and orders modules by
test count, so the one-test modules costing 15-25 s each ran last and left one worker idle.

Two hooks (this module is a plugin, loaded by tests/conftest.py):
- each worker orders its collection (`order_items`): units by estimated cost, most costly first,
  a unit's modules contiguous, each module's tests in their own order (module-, package- and
  session-scoped fixtures see the same order a serial run of those modules would);
- the controller (`LabGroupScheduling`) hands out whole units in that order (xdist's
  loadscope machinery, with `unit_of` as the scope and its count-reordering off).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

LAB_GROUPS: dict[str, tuple[str, ...]] = {
    # the 2x2 lab (Claude alpha, beta; Codex gamma, delta): each overrides lab_home with lab_home_2x2
    "lab-2x2": (
        "tests/agents/test_discovery_live.py",
        "tests/lab/test_restart_config_live.py",
        "tests/lab/test_stub_features_live.py",
        "tests/session/test_requests_cycle_live.py",
        "tests/session/test_shared_daemon_answers_live.py",
    ),
    # the lab with a second host, hosts_lab_home in tests/lab/conftest.py (package-scoped: its
    # modules must run one after another on one worker, or the lab is taken down and started again)
    "hosts-lab": (
        "tests/lab/test_hosts_live.py",
        "tests/lab/test_hosts_session_live.py",
        "tests/lab/test_requests_hosts_live.py",
    ),
}
"""Modules that share a lab other than the session's 1+1 one: each group runs on one worker."""

COST: dict[str, float] = {
    "tests/frontends/test_dead_live.py": 6,
    "tests/frontends/test_cli_readonly_live.py": 20,
    "tests/session/test_approval_live.py": 18,
    "tests/frontends/test_cli_lab_live.py": 17,
    "tests/lab/test_requests_hosts_live.py": 25,
    "tests/lab/test_hosts_live.py": 22,
    "tests/lab/test_hosts_session_live.py": 12,
    "tests/session/test_requests_gemini_live.py": 24,
    "tests/transports/test_native_live.py": 20,
    "tests/lab/test_eight_live.py": 20,
    "tests/transports/test_tmux_live.py": 20,
    "tests/session/test_requests_cycle_live.py": 15,
    "tests/agents/gemini_cli/test_gemini_live.py": 15,
    "tests/transports/test_codex_plan_mode_live.py": 14,
    "tests/agents/gemini_cli/test_gemini_lab_live.py": 13,
    "tests/session/test_recipes_live.py": 13,
    "tests/frontends/test_cli_debug_live.py": 12,
    "tests/agents/test_discovery_live.py": 10,
    "tests/session/test_requests_live.py": 10,
    "tests/frontends/test_watch_live.py": 10,
    "tests/session/test_reply_routes_live.py": 9,
}
"""Seconds a module took in the live half (durations of a run; quiet-machine scale), for the
order only: a module not named here is estimated at PER_TEST seconds a test. A stale figure
costs some balance at the end, never a test."""

PER_TEST = 2.0

ORDER_KEY = "relay_lab_group_order"
"""The key in a worker's `workerinput` that tells it to order its collection by `order_items`."""


def unit_of(nodeid: str) -> str:
    """The unit a test is scheduled in: its lab group, else its module."""
    module = nodeid.split("::", 1)[0]
    for group, modules in LAB_GROUPS.items():
        if module in modules:
            return f"lab-group:{group}"
    return module


def order_items(nodeids: Sequence[str]) -> list[int]:
    """The run order (indices into `nodeids`): units by estimated cost, most costly first (ties in
    collection order); within a unit, modules and their tests in collection order."""
    per_module: dict[str, int] = {}
    for nid in nodeids:
        module = nid.split("::", 1)[0]
        per_module[module] = per_module.get(module, 0) + 1
    cost: dict[str, float] = {}
    first: dict[str, int] = {}
    module_first: dict[str, int] = {}
    for i, nid in enumerate(nodeids):
        module, unit = nid.split("::", 1)[0], unit_of(nid)
        first.setdefault(unit, i)
        if module not in module_first:
            module_first[module] = i
            cost[unit] = cost.get(unit, 0.0) + COST.get(module, PER_TEST * per_module[module])
    return sorted(range(len(nodeids)), key=lambda i: (-cost[unit_of(nodeids[i])], first[unit_of(nodeids[i])],
                                                      module_first[nodeids[i].split("::", 1)[0]], i))


def make_scheduler(config: Any, log: Any) -> Any:
    """xdist's loadscope scheduler with `unit_of` as the scope, units in the workers' order."""
    from xdist.scheduler import LoadScopeScheduling  # type: ignore[import-untyped]

    class LabGroupScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return unit_of(nodeid)

    config.option.loadscopereorder = False  # keep the order the workers collected (order_items)
    return LabGroupScheduling(config, log)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On an xdist worker of a `--dist loadfile` run: the run order of `order_items` (after -m and -k
    have deselected, so the estimates count what runs)."""
    if not getattr(config, "workerinput", {}).get(ORDER_KEY):
        return
    items[:] = [items[i] for i in order_items([item.nodeid for item in items])]


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """On the controller: tell each worker to order its collection (a worker's own `dist` reads "no")."""
    if node.config.getvalue("dist") == "loadfile":
        node.workerinput[ORDER_KEY] = True


@pytest.hookimpl(optionalhook=True, tryfirst=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """On the controller of a `--dist loadfile` run: `make_scheduler` instead of xdist's own."""
    if config.getvalue("dist") != "loadfile":
        return None
    return make_scheduler(config, log)
