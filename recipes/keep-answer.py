# %% [markdown]
# # keep-answer
# Ask one target a question, wait for its verified answer, then append that answer to a
# file of yours. The send shows relay's plan and asks y/N; writing the file is YOUR action,
# and `session.confirm` puts it behind the same four-part plan and y/N (nothing is written
# after an n: confirm raises, the cell stops). The ledger keeps both (`relay why action-...`).

# %% tags=["parameters"]
target = "claude:alpha"
question = "what are you working on? one line, please"
path = "answers.md"
timeout = 120

# %% ask
from pathlib import Path

from relay_repl import visible  # a peer's words, shown and written neutralised

d = await session.send(target, question, want="reply")
answer = await d.wait_reply(timeout)
assert answer is not None, f"no answer from {target}: {d.summary()}"
print(f"{target} answered: {visible(answer.text)}")

# %% keep it (your own action, behind relay's gate)
out = Path(path).resolve()
verdict = answer.verdict.verdict if answer.verdict else "unjudged"
line = f"- {target} ({verdict}, {d.relay_id}): {visible(answer.text)}\n"
await session.confirm(f"append {target}'s answer to {out.name}", target=str(out),
                      how="append one line (Python: open(path, 'a'))", payload=line,
                      done_when=f"{out.name} ends with that line",
                      files=[f"{out} (appended to; created if missing)"])
with out.open("a", encoding="utf-8") as fh:
    fh.write(line)
print(f"appended to {out}")
