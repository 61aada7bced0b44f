# %% [markdown]
# # handoff
# Ask a Codex writer for a summary, forward its reply to a Claude reviewer, then
# `session.verify` both answers (who really sent each, from the receivers' own records)
# and print the verdicts. Every send shows its plan and asks y/N first.

# %% tags=["parameters"]
writer = "codex:beta"
reviewer = "claude:alpha"
task = "summarize what you changed today in one line"
timeout = 120

# %% ask the writer
from relay_repl import visible  # a peer's words, shown but never acted on by the terminal

w = await session.send(writer, task, want="reply")
summary = await w.wait_reply(timeout)
assert summary is not None, f"no summary from {writer}: {w.summary()}"
print(f"{writer} wrote: {visible(summary.body)}")

# %% hand it to the reviewer
r = await session.send(reviewer, f"please review this summary from {writer}: {summary.body}", want="reply")
review = await r.wait_reply(timeout)
assert review is not None, f"no review from {reviewer}: {r.summary()}"
print(f"{reviewer} says: {visible(review.body)}")

# %% verify both
for d in (w, r):
    report = await session.verify(d.relay_id, d.target)
    print(f"{d.relay_id} in {d.target}: {report.verdict}; answer {d.reply.relay_id or '-'} "
          f"{d.reply.verdict.verdict if d.reply.verdict else 'unjudged'}")
