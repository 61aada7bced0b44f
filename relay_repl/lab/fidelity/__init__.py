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
from relay_repl.agents import registry
from relay_repl.lab.install import lab_kinds as kind_names  # the kinds the lab runs
from relay_repl.core.errors import LabError
from relay_repl.lab.install import resolve_clients
from relay_repl.lab.layout import client_home_vars
from relay_repl.store import paths
from relay_repl.system.polling import poll_until_sync

Progress = Callable[[str], object]
GOLDENS = Path("tests") / "agents" / "screens" / "captures"  # relative to a checkout (the working directory)


class FactSpec(BaseModel):
    """One fact relay depends on, the kinds it is about, and the live tests that prove it."""

    fact: str
    kinds: tuple[str, ...]
    paths: str = Field(description="which relay paths rely on it (what stays refused when it fails)")
    checks: tuple[str, ...] = Field(description="GROUP:CHECK names (checks.all_checks()); a [param] suffix is one case")


def _facts() -> tuple[FactSpec, ...]:
    """Every registered kind's fidelity facts (`AgentKind.checks.fidelity_facts`, in the kind's package),
    one row per fact text: a fact two kinds declare alike is one fact about both."""
    merged: dict[str, FactSpec] = {}
    for k in registry.kinds():
        for f in k.checks.fidelity_facts():
            have = merged.get(f.fact)
            if have is None:
                merged[f.fact] = FactSpec(fact=f.fact, kinds=(k.facts.kind,), paths=f.paths, checks=f.checks)
            else:
                merged[f.fact] = have.model_copy(update={"kinds": (*have.kinds, k.facts.kind)})
    return tuple(merged.values())


FACTS: tuple[FactSpec, ...] = _facts()


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
        of = " + ".join(f"{kind} {v}" for kind, v in self.versions.items())
        head = f"fidelity of {of} ({self.clients}: {self.prefix}) in {self.seconds:.0f}s"
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
    for k in ("RELAY_LAB_DIR", "RELAY_TMUX_SOCKET", *sorted(client_home_vars())):
        env.pop(k, None)  # never the operator's (or a lab's) sessions: the children start their own labs
    return env


_SCREEN_LINE = re.compile(r"^\s*(ok|MISMATCH)\s+(\S+)\s+(.*)$")


def _screen_kind(name: str) -> str:
    """The kind a recorder line is about: its name starts with the kind (`<kind>/<screen>`)."""
    head = re.split(r"[/:\s]", name, maxsplit=1)[0]
    known = registry.kind_by_prefix(head)
    return known.facts.kind if known is not None else head


def _parse_screens(out: str) -> tuple[list[FactResult], dict[str, str]]:
    facts: list[FactResult] = []
    for line in out.splitlines():
        m = _SCREEN_LINE.match(line)
        if not m:
            continue
        ok, name, rest = m.group(1) == "ok", m.group(2), m.group(3)
        kind = _screen_kind(name)
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


def verdicts(facts: list[FactResult], kinds: tuple[str, ...] | list[str],
             got: dict[str, str]) -> tuple[dict[str, str], dict[str, list[str]]]:
    """({kind: version} to record as verified here, {kind: relay paths that stay refused}).

    A kind is verified only when facts about it were checked and all hold: a kind the lab runs
    but no fact names (a new kind before its checks exist) stays unverified, never verified by
    zero checks."""
    recorded: dict[str, str] = {}
    refused: dict[str, list[str]] = {}
    for kind in kinds:
        mine = [f for f in facts if kind in f.kinds]
        bad = [f for f in mine if not f.ok]
        if not mine:
            refused[kind] = ["(all: no fact about this kind is checked yet; the version stays unverified)"]
        elif not bad:
            recorded[kind] = got[kind]
        else:
            refused[kind] = sorted({p.strip() for f in bad for p in f.paths.split(",")} - {"discovery", "plans"})
            refused[kind] = refused[kind] or ["(none: only discovery facts failed; the version stays unverified)"]
    return recorded, refused


def run(clients: str = "pinned", progress: Progress = print, screens: bool = True) -> FidelityReport:
    """Resolve (installing if needed) the client set, run every check against it in private
    labs, record the verdict. Raises LabError for what prevents running at all."""
    _need_asserts()
    t0 = time.monotonic()
    prefix, got = resolve_clients(clients, progress)
    progress(f"checking {' and '.join(f'{kind} {v}' for kind, v in got.items())} from {prefix} "
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
    recorded, refused = verdicts(facts, kind_names(), got)
    for kind, v in recorded.items():
        versions.record_verified(kind, v, facts=sum(kind in f.kinds for f in facts))
    return FidelityReport(clients=clients, prefix=str(prefix), versions=got, ok=ok,
                          seconds=time.monotonic() - t0, facts=facts, captures=captures,
                          recorded=recorded, refused_paths=refused)
