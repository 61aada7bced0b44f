"""Run fidelity checks against the lab, one lab per group, in this process; write the results.

    python -m relay_repl.lab.fidelity.checks --out results.json [--only GROUP:CHECK ...]

`relay fidelity` starts this as a child (its environment points the lab at the candidate
clients and a throwaway RELAY_HOME), so the parent's environment is never moved and the screen
recorder can run beside it. Each group (discovery, native, tmux) gets a fresh lab under RELAY_HOME/<group>
with the sessions every kind's fidelity module asks for it (`LAB_COUNTS`), taken down afterwards. A check
passes when it returns, fails on AssertionError or any other exception (its message and the
failing line are the evidence); a failed check is run once more, alone, after its group's others
(two shared cores: a timing miss under load), and fails only if it fails again.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
import traceback
from collections.abc import Awaitable, Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from pydantic import BaseModel

CHECK_TIMEOUT = 240.0


class CheckResult(BaseModel):
    outcome: str  # passed | failed
    why: str
    seconds: float


def groups() -> dict[str, ModuleType]:
    from relay_repl.lab.fidelity import discovery, native, tmux

    return {"discovery": discovery, "native": native, "tmux": tmux}


def lab_counts(group: str) -> dict[str, int]:
    """{kind: sessions} a check group's lab starts: each kind's fidelity module says (`LAB_COUNTS`);
    a kind the lab cannot run offline has none."""
    from relay_repl.agents import registry

    out: dict[str, int] = {}
    for k in registry.kinds():
        mod = k.checks.fidelity()
        n = int(getattr(mod, "LAB_COUNTS", {}).get(group, 0)) if mod is not None and k.lab_driver() is not None else 0
        if n:
            out[k.facts.kind] = n
    return out


def all_checks() -> list[str]:
    return [f"{g}:{name}" for g, mod in groups().items() for name in mod.CHECKS]


def _is_check_file(filename: str) -> bool:
    """A check's own code: the lab's checks, or a kind's (agents/<kind>/fidelity.py and the protocol module)."""
    p = Path(filename).as_posix()
    return "/lab/fidelity/" in p or ("/agents/" in p and p.endswith("/fidelity.py"))


def _evidence(exc: BaseException) -> str:
    """The exception's first line and the check's line that raised it (no pytest to rewrite asserts)."""
    msg = (str(exc).strip().splitlines() or [""])[0][:200]
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if _is_check_file(f.filename)]
    where = f" at {Path(frames[-1].filename).name}:{frames[-1].lineno} `{(frames[-1].line or '').strip()[:120]}`" \
        if frames else ""
    return f"{type(exc).__name__}: {msg}{where}"


def _one(fn: Callable[[], Awaitable[Any]]) -> CheckResult:
    import anyio

    async def go() -> None:
        with anyio.fail_after(CHECK_TIMEOUT):
            await fn()

    t0 = time.monotonic()
    try:
        anyio.run(go)
    except Exception as exc:  # any failure of a check is its fact's evidence, never the runner's crash
        return CheckResult(outcome="failed", why=_evidence(exc), seconds=time.monotonic() - t0)
    return CheckResult(outcome="passed", why=f"{time.monotonic() - t0:.1f}s", seconds=time.monotonic() - t0)


def run_group(group: str, names: list[str], base: Path, progress: Callable[[str], object] = print) -> dict[str, CheckResult]:
    """Start the group's lab under base/<group>, run `names` (CHECKS keys) in order, take the lab down."""
    import relay_repl.lab.launcher as launcher

    mod = groups()[group]
    saved = dict(os.environ)
    home = base / group
    os.environ["RELAY_HOME"] = str(home)
    out: dict[str, CheckResult] = {}
    try:
        launcher.ensure_lab_counts(lab_counts(group), progress=lambda m: None)
        os.environ.update(launcher.env())
        if group != "native":  # as the live tests: discovery and tmux read the lab's HOME
            os.environ["HOME"] = str(launcher.layout().home)
        for name in names:
            out[name] = _one(mod.CHECKS[name])
            progress(f"  {group}:{name}: {out[name].outcome} ({out[name].why})")
        failed = [n for n, r in out.items() if r.outcome != "passed"]
        if 0 < len(failed) <= 4:
            for name in failed:
                again = _one(mod.CHECKS[name])
                note = " (passed on the re-run)" if again.outcome == "passed" else " (failed twice)"
                out[name] = CheckResult(outcome=again.outcome, why=(again.why if again.outcome != "passed"
                                                                    else out[name].why) + note, seconds=again.seconds)
                progress(f"  {group}:{name}: re-run {again.outcome}")
    except Exception as exc:  # the lab did not start: every check of the group failed with that reason
        for name in names:
            out.setdefault(name, CheckResult(outcome="failed", why=f"lab: {_evidence(exc)}", seconds=0.0))
    finally:
        try:
            launcher.down(progress=lambda m: None)
        finally:
            os.environ.clear()
            os.environ.update(saved)
            shutil.rmtree(home / "lab" / "cache", ignore_errors=True)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--out", type=Path, required=True, help="results JSON: {group:check: {outcome, why, seconds}}")
    ap.add_argument("--only", nargs="*", help="GROUP:CHECK names (default: every check)")
    a = ap.parse_args(argv)
    if not __debug__:
        print("the fidelity checks are assertions: run without python -O", file=sys.stderr)
        return 2
    wanted = a.only or all_checks()
    base = Path(os.environ.get("RELAY_HOME") or ".").resolve()
    results: dict[str, CheckResult] = {}
    for group in groups():
        names = [w.split(":", 1)[1] for w in wanted if w.split(":", 1)[0] == group]
        if names:
            for name, r in run_group(group, names, base, progress=lambda m: print(m, flush=True)).items():
                results[f"{group}:{name}"] = r
                a.out.write_text(json.dumps({k: v.model_dump() for k, v in results.items()}, indent=1))
    a.out.write_text(json.dumps({k: v.model_dump() for k, v in results.items()}, indent=1))
    return 0 if all(r.outcome == "passed" for r in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
