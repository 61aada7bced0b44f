"""Layer 2: storage — the SQLite ledger, the tolerant JSONL reader, state paths.

Imports only `core`.
"""
