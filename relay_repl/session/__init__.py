"""Layer 6: what the operator holds — the session (discovery, ranking, the gate, send,
confirm), the inbox, replies, the debugger, doctor, verify, recipes.
"""
