"""Layer 6: what the operator holds — the session (discovery, ranking, the gate, send,
confirm), the inbox, replies, the debugger, doctor, verify, recipes.

Split by job, imports going only down (pyproject: contract "session-parts"):
- serve.py (`relay serve --stdio`: runs a session for another relay), above app.py (builds the
  session a front end hands to the operator), above session.py (`Session`, the facade that
  assembles the parts);
- runs/ (notebooks, recipes, the debugger), remote/ (other hosts), mcp/ (`relay mcp`): each
  beside the others, never importing them;
- core/ (finding, the gate, sending, the inbox and answers, requests, what the commands read).
"""
