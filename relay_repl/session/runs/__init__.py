"""Runs of many sends: notebooks (notebook), recipes (runner, recipes), the journal a stopped run
resumes from (journal, send_journal), a run's report (exchange_report), and the one-delivery
debugger (debugger). Each drives the core's send path through its hooks; none imports
remote/ or mcp/ (pyproject: contract "session-parts").
"""
