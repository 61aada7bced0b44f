# %% [markdown]
# # triage
# Ask every live target what it is working on, wait for the replies concurrently,
# print one table with the verdicts, then send a follow-up to the target named by
# `follow_up`. Run it with `relay notebook run recipes/triage.py -p follow_up=codex:beta`.
# Every send shows its plan and asks y/N first.

# %% tags=["parameters"]
follow_up = "claude:alpha"
question = "what are you working on? one line, please"
follow_up_text = "thanks: please tell me the next step you will take"
timeout = 120

# %% who is live
import os

from relay_repl import visible  # a peer's words, shown but never acted on by the terminal

targets = [t for t in session.targets if t.live and t.transports and t.pid != os.getpid()]
print("asking:", ", ".join(t.spec for t in targets) or "nobody (no live target: `relay targets`)")
assert targets, "no live target to ask"

# %% ask everyone
asked = [await session.send(t.spec, question, want="reply") for t in targets]
[visible(d.summary()) for d in asked]

# %% wait for the replies
async def answer_of(d):
    await d.wait_reply(timeout)

async with anyio.create_task_group() as tg:
    for d in asked:
        tg.start_soon(answer_of, d)

# %% table
rows = [("TARGET", "RELAY ID", "STATE", "VERDICT", "REPLY")]
for d in asked:
    r = d.reply
    verdict = r.verdict.verdict if r is not None and r.verdict is not None else "-"
    rows.append((d.target, d.relay_id or "-", d.state.value, verdict, visible(r.body) if r else "(no reply)"))
widths = [max(len(row[i]) for row in rows) for i in range(4)]
for row in rows:
    print("  ".join(cell.ljust(w) for cell, w in zip(row, widths)) + "  " + row[4])

# %% follow up
more = await session.send(follow_up, follow_up_text, want="reply")
await more.wait_reply(timeout)
print(visible(more.summary()))
