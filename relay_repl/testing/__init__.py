"""Replay doubles for the seams under the transports (beside the product, like the lab).

The real transports run unchanged against these: a `codex` executable that answers
`codex queue` as Codex 0.169.0 does and writes the row into a copy of a recorded
`queue_1.sqlite`, a Codex that takes a queued item into the rollout with records
copied from a recorded lab rollout, and a Claude session socket that answers the
NDJSON wire and appends the record a real Claude appends (top-level `origin`, or
`attachment.origin` when busy) taken from a recorded lab transcript. Nothing in the
product imports this package (pyproject's import contracts).
"""
