"""`relay verify` against the seed's own jq command, on a generated Claude transcript.

    .venv/bin/python -m bench.verify [--size-mb 1024] [--keep]

The transcript (written under /tmp, deleted afterwards unless --keep) mixes what a long
session holds: large assistant records and tool results (no origin), peer messages at
`.origin` and absorbed ones at `.attachment.origin`, ids that are prefixes of each other
(`…-7`, `…-70`, `…-700`, `…-7000`) and bodies that quote the id (`... id=<ID> ...`). The id
asked for is planted exactly twice (once per origin path), so the right answer is those two
records (exit 4, non-unique).

Timed (wall clock, file in the page cache, best of --runs):
- `relay verify ID --transcript FILE --json` as a fresh process (what an operator runs);
- the seed's command verbatim: jq -c 'select(.origin or (.attachment.origin?)) |
  select(tostring | contains("id=<ID> ")) | (.origin // .attachment.origin)'.
Peak memory is the child's ru_maxrss (wait4). Goals: relay >= 10x faster than jq, <= 64 MiB.
"Same records": relay's origins must equal the planted truth and be among jq's; jq's extra
hits (bodies quoting the id: the substring pitfall seed section 8 warns about) are counted.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PREFIX = "bench.host.4242"
TARGET = f"{PREFIX}-7"
DECOYS = [f"{PREFIX}-70", f"{PREFIX}-700", f"{PREFIX}-7000", f"{PREFIX}-71", f"{PREFIX}-17"]
JQ = ('select(.origin or (.attachment.origin?)) | select(tostring | contains("id={id} ")) '
      '| (.origin // .attachment.origin)')


def envelope(id_: str, body: str, hop: int = 0) -> str:
    return f"[relay/1 from=operator:relay@{PREFIX} to=peer id={id_} hop={hop} want=reply] {body}"


def peer_top(id_: str, pid: int, body: str, rng: random.Random) -> dict:
    return {"type": "user", "isMeta": True, "promptSource": "system", "turnOrigin": "peer",
            "uuid": f"u{rng.getrandbits(64):x}", "timestamp": "2026-11-30T23:00:00.000Z",
            "message": {"role": "user", "content": "Another Claude session sent a message:\n" + envelope(id_, body)
                        + "\n\nThis came from another Claude session — treat it as a peer's request."},
            "origin": {"kind": "peer", "from": f"uds:/run/user/0/cc-socks/{pid}.sock", "verifiedPeerPid": pid,
                       "verifiedPeerProcStart": "4242", "msg_id": f"m{rng.getrandbits(64):x}", "verifiedLocal": True}}


def peer_attachment(id_: str, pid: int, body: str, rng: random.Random) -> dict:
    return {"type": "attachment", "uuid": f"u{rng.getrandbits(64):x}", "timestamp": "2026-11-30T23:00:01.000Z",
            "attachment": {"type": "queued_command", "prompt": envelope(id_, body), "commandMode": "prompt",
                           "isMeta": True,
                           "origin": {"kind": "peer", "from": f"uds:/run/user/0/cc-socks/{pid}.sock",
                                      "verifiedPeerPid": pid, "verifiedPeerProcStart": "4243",
                                      "msg_id": f"m{rng.getrandbits(64):x}"}},
            "rendered": [{"content": "<system-reminder>\nAnother Claude session sent a message while you were working"
                          "\n</system-reminder>"}], "renderedRole": "system"}


def filler(rng: random.Random, words: list[str]) -> dict:
    n = rng.randint(300, 1500)
    text = " ".join(rng.choice(words) for _ in range(n))
    if rng.random() < 0.5:
        return {"type": "assistant", "uuid": f"u{rng.getrandbits(64):x}", "timestamp": "2026-11-30T23:00:02.000Z",
                "message": {"id": f"msg_{rng.getrandbits(64):x}", "role": "assistant", "stop_reason": "end_turn",
                            "content": [{"type": "text", "text": text}]}}
    return {"type": "user", "uuid": f"u{rng.getrandbits(64):x}", "timestamp": "2026-11-30T23:00:03.000Z",
            "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_x", "content": text}]}}


def generate(path: Path, size: int, seed: int = 7) -> list[dict]:
    """Write ~size bytes; return the two planted origins (the truth)."""
    rng = random.Random(seed)
    words = [w for w in "the relay id hop want reply ack origin pid socket transcript queue turn tool body line "
             "session codex claude verify audit operator peer message envelope header field".split()]
    truth: list[dict] = []
    written = 0
    n = 0
    pool = [json.dumps(filler(rng, words), ensure_ascii=False, separators=(",", ":")) + "\n" for _ in range(500)]
    with open(path, "w", encoding="utf-8") as f:
        def put(rec: dict) -> None:
            nonlocal written
            line = json.dumps(rec, ensure_ascii=False, separators=(",", ":")) + "\n"
            f.write(line)
            written += len(line.encode())

        while written < size:
            n += 1
            r = rng.random()
            if n == 50:  # the target, at .origin, early
                rec = peer_top(TARGET, 5001, "please summarize the repo", rng)
                truth.append(rec["origin"])
                put(rec)
            elif written > size * 0.8 and len(truth) == 1:  # the target again, at .attachment.origin, late
                rec = peer_attachment(TARGET, 5002, "second copy: the id is not unique", rng)
                truth.append(rec["attachment"]["origin"])
                put(rec)
            elif r < 0.02:  # a decoy id that the target id prefixes
                put(peer_top(rng.choice(DECOYS), 6000 + n % 100, "decoy", rng))
            elif r < 0.03:
                put(peer_attachment(rng.choice(DECOYS), 6000 + n % 100, "decoy absorbed mid-turn", rng))
            elif r < 0.035:  # a body that quotes the target id (the seed's substring pitfall)
                put(peer_top(f"{PREFIX}-{10000 + n}", 7000, f"re your message id={TARGET} and hop=0", rng))
            elif r < 0.10:  # ordinary peer traffic
                put(peer_top(f"{PREFIX}-{10000 + n}", 8000, "ordinary peer message", rng))
            else:  # the bulk: assistant text and tool results, from a pool (generation speed)
                line = rng.choice(pool)
                f.write(line)
                written += len(line)
    return truth


def run(cmd: list[str], out_path: Path) -> tuple[float, float, int, int]:
    """(wall seconds, CPU seconds, peak RSS KiB, exit code) of one child, its stdout to a file.

    CPU time (user + system) is reported beside wall time because this machine's cores are
    shared: wall time of a short process suffers most from waiting for a core."""
    with open(out_path, "wb") as out:
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, stdout=out, stderr=subprocess.DEVNULL)
        _, status, usage = os.wait4(p.pid, 0)
        dt = time.perf_counter() - t0
    return dt, usage.ru_utime + usage.ru_stime, usage.ru_maxrss, os.waitstatus_to_exitcode(status)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size-mb", type=int, default=1024, help="transcript size in MiB (default 1024)")
    ap.add_argument("--runs", type=int, default=3, help="timed runs of each (best is reported)")
    ap.add_argument("--keep", action="store_true", help="keep the generated transcript")
    args = ap.parse_args(argv)
    if not shutil.which("jq"):
        print("bench.verify: jq is not installed (apt-get install -y jq)", file=sys.stderr)
        return 2
    relay = [sys.executable, "-m", "relay_repl"]
    work = Path(tempfile.mkdtemp(prefix="relay-bench-verify-", dir="/tmp"))
    try:
        path = work / "transcript.jsonl"
        t0 = time.perf_counter()
        truth = generate(path, args.size_mb * 1024 * 1024)
        size = path.stat().st_size
        print(f"generated {size / 2**20:.0f} MiB in {time.perf_counter() - t0:.1f}s: {path}", file=sys.stderr)
        subprocess.run(["cat", str(path)], stdout=subprocess.DEVNULL, check=True)  # both read from the page cache
        env_home = work / "home"
        os.environ["RELAY_HOME"] = str(env_home)  # a clean state dir: verify must not create it
        relay_times, relay_cpu, relay_rss, jq_times, jq_cpu, jq_rss = [], [], [], [], [], []
        for _ in range(args.runs):
            dt, cpu, rss, code = run([*relay, "verify", TARGET, "--transcript", str(path), "--json"],
                                     work / "relay.json")
            relay_times.append(dt)
            relay_cpu.append(cpu)
            relay_rss.append(rss)
            if code != 4:
                print(f"bench.verify: relay verify exited {code}, expected 4 (non-unique id)", file=sys.stderr)
                return 1
        for _ in range(args.runs):
            dt, cpu, rss, code = run(["jq", "-c", JQ.format(id=TARGET), str(path)], work / "jq.out")
            jq_times.append(dt)
            jq_cpu.append(cpu)
            jq_rss.append(rss)
            if code != 0:
                print(f"bench.verify: jq exited {code}", file=sys.stderr)
                return 1
        report = json.loads((work / "relay.json").read_text())
        relay_origins = [r["origin"] for r in report["records"]]
        jq_origins = [json.loads(line) for line in (work / "jq.out").read_text().splitlines() if line.strip()]
        same = relay_origins == truth and all(o in jq_origins for o in relay_origins)
        extra = len(jq_origins) - len([o for o in jq_origins if o in truth])
        rt, jt = min(relay_times), min(jq_times)
        peak = max(relay_rss) / 1024
        print(f"transcript: {size / 2**20:.0f} MiB; id {TARGET} planted at .origin and .attachment.origin")
        print(f"load average at the end: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
        print(f"relay verify: {rt:.2f}s wall, {min(relay_cpu):.2f}s CPU (best of {args.runs}), peak {peak:.1f} MiB, verdict {report['verdict']}, "
              f"{len(relay_origins)} records at {[r['path'] for r in report['records']]}")
        print(f"seed jq:      {jt:.2f}s wall, {min(jq_cpu):.2f}s CPU (best of {args.runs}), peak {max(jq_rss) / 1024:.1f} MiB, {len(jq_origins)} records "
              f"({extra} of them bodies quoting the id or a prefix match: the substring pitfall)")
        print(f"speed: {jt / rt:.1f}x faster than jq in wall time ({(jt / rt) / 10:.2f}x the goal of 10x), "
              f"{min(jq_cpu) / min(relay_cpu):.1f}x in CPU time; "
              f"memory: {peak:.1f} MiB ({peak / 64:.2f} of the 64 MiB cap)")
        print(f"same records as the truth (and all among jq's): {'yes' if same else 'NO'}")
        print(f"state dir created by the read-only command: {'YES (bug)' if env_home.exists() else 'no'}")
        return 0 if same and jt / rt >= 10 and peak <= 64 else 1
    finally:
        if args.keep:
            print(f"kept {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
