"""`relay fidelity`: check every reverse-engineered fact relay depends on against one
client set (pinned, latest, the machine's own, or any npm prefix), in the lab.

Why this way: the facts are checked against the REAL clients by package code in this folder
(`discovery.py`, `native.py`, `tmux.py`: the checks; `screens.py`: the screen recorder, which
stages every screen class the classifiers know and reads it back through the product's own
`PaneIO.snapshot` and classifiers). The live tests call these same functions, so the checks
are not copies, and an installed wheel runs them with no source checkout and no pytest.
Fidelity runs them in two child processes (`python -m relay_repl.lab.fidelity.checks`, and the
recorder) with the lab pointed at the candidate clients, and maps each result to the fact it
proves. The recorder writes fresh captures for the version next to the golden ones
(tests/agents/screens/captures/<kind>-<version>/, when run from a checkout) when there are none
yet; otherwise (a version that has goldens, or no checkout) under <state>/fidelity/captures/.

While it runs, `RELAY_FIDELITY_CANDIDATE` (set only in the child processes) lets the
version policy treat the candidate versions as verified, so the product paths under
test are exercised rather than refused. When every fact passes, each version is
recorded as verified on this machine (`agents.versions.record_verified`), which lifts
the refusals for it; when some fail, nothing is recorded and the report names the
paths that stay refused.

Blocking; call from a thread in async code.
"""

from __future__ import annotations

import math
import os
import re
import subprocess
import sys
import tempfile
import time
import json
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel, Field

from relay_repl.agents import versions
from relay_repl.agents.claude_code.agent import KIND as CLAUDE
from relay_repl.agents.codex.agent import KIND as CODEX
from relay_repl.lab.install import lab_kinds as kind_names  # the kinds the lab runs
from relay_repl.core.errors import LabError
from relay_repl.lab.install import resolve_clients
from relay_repl.store import paths
from relay_repl.system.polling import poll_until_sync

Progress = Callable[[str], object]
GOLDENS = Path("tests") / "agents" / "screens" / "captures"  # relative to a checkout (the working directory)


class FactSpec(BaseModel):
    """One fact relay depends on and the live tests that prove it."""

    fact: str
    kinds: tuple[str, ...]
    paths: str = Field(description="which relay paths rely on it (what stays refused when it fails)")
    checks: tuple[str, ...] = Field(description="GROUP:CHECK names (checks.all_checks()); a [param] suffix is one case")


_D, _N, _T = "discovery:", "native:", "tmux:"

FACTS: tuple[FactSpec, ...] = (
    FactSpec(fact="registry fields, listing, panes (both kinds)", kinds=(CLAUDE, CODEX), paths="discovery",
             checks=(_D + "both_kinds_listed_idle_with_their_panes_and_transports",)),
    FactSpec(fact="liveness: busy while a turn runs", kinds=(CLAUDE, CODEX), paths="discovery, plans",
             checks=(_D + "busy_while_a_slow_turn_runs",)),
    FactSpec(fact="codex rename seen (session index)", kinds=(CODEX,), paths="discovery",
             checks=(_D + "codex_rename_is_seen",)),
    FactSpec(fact="codex daemon status (thread loaded, no TUI)", kinds=(CODEX,), paths="discovery, codex-queue",
             checks=(_D + "codex_thread_loaded_without_a_tui_is_live_with_no_pane",)),
    FactSpec(fact="claude socket wire + transcript origin records (idle)", kinds=(CLAUDE,),
             paths="claude-code-socket, claude-code-message", checks=(_N + "claude_socket_to_an_idle_target",)),
    FactSpec(fact="claude socket wire + origin records (busy, both paths)", kinds=(CLAUDE,),
             paths="claude-code-socket, claude-code-message",
             checks=(_N + "claude_socket_transports_to_a_busy_target",)),
    FactSpec(fact="claude message wrapper recorded", kinds=(CLAUDE,), paths="claude-code-message",
             checks=(_N + "message_plan_shows_the_wrapper_that_is_written_and_recorded",)),
    FactSpec(fact="codex queue schema and read-back (idle)", kinds=(CODEX,), paths="codex-queue",
             checks=(_N + "codex_queue_to_an_idle_target",)),
    FactSpec(fact="codex rollout queue turns (busy)", kinds=(CODEX,), paths="codex-queue",
             checks=(_N + "codex_queue_to_a_busy_target_waits_for_its_turn",)),
    FactSpec(fact="tmux idle delivery with receiver evidence", kinds=(CLAUDE, CODEX), paths="tmux",
             checks=(_T + "idle_delivery_with_receiver_evidence",)),
    FactSpec(fact="busy submit: claude Enter queues for the tool boundary", kinds=(CLAUDE,), paths="tmux",
             checks=(_T + "busy_claude_enter_queues_then_delivers",)),
    FactSpec(fact="busy submit: codex Enter steers into the turn", kinds=(CODEX,), paths="tmux",
             checks=(_T + "busy_codex_enter_steers_into_the_running_turn",)),
    FactSpec(fact="preflight refusals send zero keys (draft, copy-mode, slash menu)", kinds=(CLAUDE, CODEX),
             paths="tmux", checks=(_T + "refusal_sends_zero_keys",)),
    FactSpec(fact="preflight refusal on a dialog sends zero keys", kinds=(CLAUDE, CODEX), paths="tmux",
             checks=(_T + "dialog_refusal_sends_zero_keys",)),
)


class FactResult(BaseModel):
    fact: str
    kinds: list[str]
    paths: str
    ok: bool
    evidence: str


class FidelityReport(BaseModel):
    clients: str
    prefix: str
    versions: dict[str, str]
    ok: bool
    seconds: float
    facts: list[FactResult]
    captures: dict[str, str] = Field(default_factory=dict, description="kind -> directory of fresh captures")
    recorded: dict[str, str] = Field(default_factory=dict, description="kind -> version recorded as verified here")
    refused_paths: dict[str, list[str]] = Field(default_factory=dict,
                                                description="kind -> relay paths that stay refused for its version")

    def table(self) -> str:
        head = (f"fidelity of claude-code {self.versions.get(CLAUDE)} + codex {self.versions.get(CODEX)} "
                f"({self.clients}: {self.prefix}) in {self.seconds:.0f}s")
        w = max(len(f.fact) for f in self.facts) if self.facts else 10
        rows = [head, ""]
        for f in self.facts:
            rows.append(f"{'✔' if f.ok else '✘'} {f.fact.ljust(w)}  {f.evidence}")
        passed = sum(f.ok for f in self.facts)
        rows.append("")
        rows.append(f"{passed}/{len(self.facts)} facts hold")
        for kind, v in self.recorded.items():
            rows.append(f"recorded: {kind} {v} is verified on this machine (its refusals are lifted)")
        for kind, refused in self.refused_paths.items():
            rows.append(f"{kind} {self.versions.get(kind)} stays unverified: refused paths: {', '.join(refused)}")
        for kind, d in self.captures.items():
            rows.append(f"captures for {kind}: {d}")
        return "\n".join(rows)


def _need_asserts() -> None:
    if not __debug__:
        raise LabError("relay fidelity's checks are assertions and python -O strips them: run it without -O "
                       "(and without PYTHONOPTIMIZE)")


def _child_env(prefix: Path, got: dict[str, str], home: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update({
        "RELAY_LAB_CLIENTS": str(prefix),
        "RELAY_LAB_ANY_CLIENTS": "1",
        "RELAY_FIDELITY_CANDIDATE": ",".join(f"{k}={v}" for k, v in got.items()),
        "RELAY_HOME": str(home),
    })
    for k in ("RELAY_LAB_DIR", "RELAY_TMUX_SOCKET", "CLAUDE_CONFIG_DIR", "CODEX_HOME"):
        env.pop(k, None)  # never the operator's (or a lab's) sessions: the children start their own labs
    return env


_SCREEN_LINE = re.compile(r"^\s*(ok|MISMATCH)\s+(\S+)\s+(.*)$")


def _parse_screens(out: str) -> tuple[list[FactResult], dict[str, str]]:
    facts: list[FactResult] = []
    for line in out.splitlines():
        m = _SCREEN_LINE.match(line)
        if not m:
            continue
        ok, name, rest = m.group(1) == "ok", m.group(2), m.group(3)
        kind = CLAUDE if name.startswith(CLAUDE) or "claude" in name else CODEX
        facts.append(FactResult(fact=f"screen {name.rstrip(':')}", kinds=[kind], paths="tmux", ok=ok, evidence=rest[:160]))
    return facts, {}


def _results(path: Path) -> dict[str, tuple[str, str]]:
    """{GROUP:CHECK[param]: (outcome, reason)} from the checks child's results file."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {name: (r.get("outcome", "failed"), r.get("why", "")) for name, r in raw.items()}


def _fact_results(cases: dict[str, tuple[str, str]], tail: str) -> list[FactResult]:
    results = []
    for spec in FACTS:
        hits = {nid: r for nid, r in cases.items() for t in spec.checks if nid == t or nid.startswith(t + "[")}
        if not hits:
            results.append(FactResult(fact=spec.fact, kinds=list(spec.kinds), paths=spec.paths, ok=False,
                                      evidence=f"not run ({tail or 'the checks gave no result'})"))
            continue
        bad = {nid: r for nid, r in hits.items() if r[0] != "passed"}
        if bad:
            nid, (outcome, why) = next(iter(bad.items()))
            evidence = f"{outcome}: {nid.split('::')[-1]}: {why}"
        else:
            evidence = f"{len(hits)} live check(s) passed ({', '.join(r[1] for r in hits.values())})"
        results.append(FactResult(fact=spec.fact, kinds=list(spec.kinds), paths=spec.paths, ok=not bad,
                                  evidence=evidence))
    return results


def run(clients: str = "pinned", progress: Progress = print, screens: bool = True) -> FidelityReport:
    """Resolve (installing if needed) the client set, run every check against it in private
    labs, record the verdict. Raises LabError for what prevents running at all."""
    _need_asserts()
    t0 = time.monotonic()
    prefix, got = resolve_clients(clients, progress)
    progress(f"checking claude-code {got[CLAUDE]} and codex {got[CODEX]} from {prefix} "
             "(private labs; about 3 minutes) ...")
    work = Path(tempfile.mkdtemp(prefix="relay-fidelity-"))
    results = work / "results.json"
    procs: list[tuple[str, subprocess.Popen[str]]] = []
    logs: dict[str, Path] = {"checks": work / "checks.log"}
    with open(logs["checks"], "w") as fh:
        procs.append(("checks", subprocess.Popen(
            [sys.executable, "-m", "relay_repl.lab.fidelity.checks", "--out", str(results)], cwd=work,
            env=_child_env(prefix, got, work / "checks-home"), stdout=fh, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, text=True)))
    # Fresh captures go beside the golden ones when run from a checkout whose goldens lack this
    # version (the new goldens of a pin move); otherwise into the state directory, so a check
    # never rewrites tracked files and an installed relay never needs a checkout.
    goldens = Path.cwd() / GOLDENS
    fresh_out = goldens
    if not goldens.is_dir() or any((goldens / f"{kind}-{got[kind]}").exists() for kind in kind_names()):
        fresh_out = paths.state_dir() / "fidelity" / "captures"
        fresh_out.mkdir(parents=True, exist_ok=True)
    if screens:
        logs["screens"] = work / "screens.log"
        screen_env = _child_env(prefix, got, work / "screens-home")
        with open(logs["screens"], "w") as fh:
            procs.append(("screens", subprocess.Popen(
                [sys.executable, "-m", "relay_repl.lab.fidelity.screens", "--out", str(fresh_out)], cwd=work,
                env=screen_env, stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, text=True)))
    try:
        def still_running(_left: float) -> None:
            running = ", ".join(n for n, p in procs if p.poll() is None)
            progress(f"  ... {running} still running ({time.monotonic() - t0:.0f}s)")

        # no deadline: each child has its own bounds; a line every 15 s says which still run
        poll_until_sync(lambda: None if any(p.poll() is None for _, p in procs) else True, timeout=math.inf,
                        interval=1.0, progress=still_running, progress_every=15)
    except BaseException:
        for _, p in procs:
            if p.poll() is None:
                p.terminate()
        raise
    checks_log = logs["checks"].read_text(errors="replace")
    tail = next((ln.strip() for ln in reversed(checks_log.splitlines()) if ln.strip()), "")
    cases = _results(results)
    facts = _fact_results(cases, tail[:200])
    captures: dict[str, str] = {}
    if screens:
        screen_log = logs["screens"].read_text(errors="replace")
        screen_facts, _ = _parse_screens(screen_log)
        if not screen_facts:
            final = next((ln.strip() for ln in reversed(screen_log.splitlines()) if ln.strip()), "no output")
            screen_facts = [FactResult(fact="screen classes (recorder)", kinds=list(kind_names()), paths="tmux", ok=False,
                                       evidence=f"recorder gave no readings: {final[:200]} (log {logs['screens']})")]
        facts += screen_facts
        for kind in kind_names():
            d = fresh_out / f"{kind}-{got[kind]}"
            if d.is_dir():
                captures[kind] = str(d)
    ok = all(f.ok for f in facts)
    recorded: dict[str, str] = {}
    refused: dict[str, list[str]] = {}
    for kind in kind_names():
        bad = [f for f in facts if kind in f.kinds and not f.ok]
        if not bad:
            versions.record_verified(kind, got[kind], facts=sum(kind in f.kinds for f in facts))
            recorded[kind] = got[kind]
        else:
            refused[kind] = sorted({p.strip() for f in bad for p in f.paths.split(",")} - {"discovery", "plans"})
            refused[kind] = refused[kind] or ["(none: only discovery facts failed; the version stays unverified)"]
    return FidelityReport(clients=clients, prefix=str(prefix), versions=got, ok=ok,
                          seconds=time.monotonic() - t0, facts=facts, captures=captures,
                          recorded=recorded, refused_paths=refused)
