"""Layer 3: system I/O shared by everything above — the one tmux runner (`tmux`), the pane
roster (`panes`), /proc readers and the one liveness rule (`proc`), the NDJSON framer and
peer credentials (`wire`). Knows nothing about any agent.
"""
