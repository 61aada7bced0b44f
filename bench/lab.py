"""Lab benchmarks: `relay lab up` to all-idle, and the stubs' added latency per turn.

    .venv/bin/python -m bench.lab [--warm 3] [--turns 50]

- up: a fresh RELAY_HOME; the first `up` is cold (the Codex daemon copies its
  ~400 MB package), later ones are warm (the copy is cached). Each is timed
  until the launcher reports every session registered and idle; each `down`
  between them is timed too.
- stub latency: the stub's own time per turn is measured from outside, as a
  full streamed Messages / Responses reply over loopback HTTP with no hold,
  and set against a whole Claude turn in the lab (socket write → the reply
  record in the transcript), as a ratio.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import tempfile
import time
import uuid
from collections.abc import Iterator


@contextlib.contextmanager
def running_or_own_lab(prefix: str) -> Iterator[None]:
    """The lab a bench measures in: the one running under RELAY_HOME when there is one (so a bench can be
    pointed at a lab left up), else a 1 Claude + 1 Codex lab of its own in a temporary RELAY_HOME, brought
    down at the end. Either way the lab's environment is in os.environ inside."""
    import relay_repl.lab.launcher as launcher

    own = launcher.status() is None or not os.environ.get("RELAY_HOME")
    with tempfile.TemporaryDirectory(prefix=prefix) as home:
        if own:
            os.environ["RELAY_HOME"] = home
            launcher.up(claude=1, codex=1, progress=lambda m: None)
        os.environ.update(launcher.env())
        try:
            yield
        finally:
            if own:
                launcher.down(progress=lambda m: None)


def bench_up(warm: int) -> None:
    import relay_repl.lab.launcher as launcher

    times, downs = [], []
    for i in range(warm + 1):
        t0 = time.perf_counter()
        launcher.up(claude=1, codex=1, progress=lambda m: None)
        times.append(time.perf_counter() - t0)
        if i < warm:
            t0 = time.perf_counter()
            launcher.down(progress=lambda m: None)
            downs.append(time.perf_counter() - t0)
    print(f"lab up, 1 Claude + 1 Codex, to all idle: cold {times[0]:.2f} s; warm median "
          f"{statistics.median(times[1:]):.2f} s (n={warm}); warm/cold = {statistics.median(times[1:]) / times[0]:.2f}")
    # every live test module with a lab of its own pays one `down` (was 5 s more: issue 17)
    print(f"lab down, 1 Claude + 1 Codex: median {statistics.median(downs):.2f} s (n={warm})")


async def stub_round_trips(turns: int) -> dict[str, float]:
    import aiohttp

    import relay_repl.lab.launcher as launcher

    st = launcher.status()
    out = {}
    async with aiohttp.ClientSession() as http:
        for name, sess in st.stub.sessions.items():
            if sess.api == "anthropic":
                url, body = f"{sess.base_url}/v1/messages?beta=true", {
                    "model": "bench", "stream": True, "max_tokens": 10, "tools": [{"name": "Bash"}],
                    "messages": [{"role": "user", "content": "bench turn"}]}
            else:
                url, body = f"{sess.base_url}/responses", {
                    "model": "bench", "stream": True, "tools": [{"type": "function", "name": "exec_command"}],
                    "input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "bench turn"}]}]}
            samples = []
            for _ in range(turns):
                t0 = time.perf_counter()
                async with http.post(url, json=body) as r:
                    await r.read()
                samples.append(time.perf_counter() - t0)
            out[sess.api] = statistics.median(samples)
    return out


def stub_in_lab_netns(turns: int) -> dict[str, float]:
    """The stubs listen inside the lab's private network namespace: measure from in there."""
    import subprocess
    import sys

    import relay_repl.lab.launcher as launcher

    st = launcher.status()
    cmd = [sys.executable, "-c", f"import anyio, json; from bench.lab import stub_round_trips; "
           f"print(json.dumps(anyio.run(stub_round_trips, {turns})))"]
    if st.netns:
        cmd = ["nsenter", "-t", str(st.stub.pid), "-n", *cmd]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, env=os.environ)
    return json.loads(out.stdout.strip().splitlines()[-1])


async def claude_turn(n: int) -> float:
    """Socket write → the assistant's reply recorded in the transcript."""
    from relay_repl.session.core.inbox import send_frames
    import relay_repl.agents.claude_code.lab as claude_lab
    import relay_repl.lab.helpers as helpers
    import relay_repl.lab.launcher as launcher

    st = launcher.status()
    s = st.session("alpha")
    samples = []
    for i in range(n):
        helpers.wait_idle("alpha", timeout=30)
        size = os.path.getsize(s.transcript) if os.path.exists(s.transcript) else 0
        tag = f"bench-{uuid.uuid4().hex[:8]}"
        t0 = time.perf_counter()
        send_frames(claude_lab.lab_facts(s).messaging_socket, [{"type": "user", "message": {"role": "user", "content": tag}, "msg_id": str(uuid.uuid4())}])
        while True:
            if not os.path.exists(s.transcript):  # created by the first turn
                time.sleep(0.005)
                continue
            with open(s.transcript, encoding="utf-8") as f:
                f.seek(size)
                tail = f.read()
            if any(json.loads(l).get("type") == "assistant" and tag in l for l in tail.splitlines() if l.strip().startswith("{")):
                break
            time.sleep(0.005)
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--warm", type=int, default=3)
    ap.add_argument("--turns", type=int, default=50)
    args = ap.parse_args()
    import anyio

    import relay_repl.store.paths as paths
    import relay_repl.lab.launcher as launcher

    os.environ.setdefault("RELAY_LAB_CLIENTS", str(paths.clients_dir()))
    with tempfile.TemporaryDirectory(prefix="relay-bench-") as home:
        os.environ["RELAY_HOME"] = home
        try:
            bench_up(args.warm)
            stub = stub_in_lab_netns(args.turns)
            turn = anyio.run(claude_turn, 10)
            for api, t in stub.items():
                print(f"stub {api}: full streamed reply over loopback, median {t * 1000:.2f} ms (n={args.turns})")
            print(f"a whole Claude turn in the lab (socket write -> reply in transcript): median {turn * 1000:.0f} ms (n=10)")
            print(f"stub share of a Claude turn: {stub['anthropic'] / turn:.3f}x")
        finally:
            launcher.down(progress=lambda m: None)


if __name__ == "__main__":
    main()
