"""Layer 6: what the operator holds — the session (discovery, ranking, the gate, send,
confirm), the inbox, replies, the debugger, doctor, verify, recipes.

Split by job, imports going only down (pyproject: contract "session-parts"):
- app.py (builds the session a front end hands to the operator), above session.py (`Session`,
  the facade that assembles the parts);
- runs/ (notebooks, recipes, the debugger), remote/ (other hosts, and `relay serve --stdio`, the
  host's side, given its session factory by the front end), mcp/ (`relay mcp`): each
  beside the others, never importing them;
- core/ (finding, the gate, sending, the inbox and answers, requests, what the commands read).
"""
