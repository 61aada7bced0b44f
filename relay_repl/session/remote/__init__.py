"""The operator's side of other hosts: one ssh channel per host and what is asked of it (remote),
sends to `HOST/kind:name` (remote_send), hosts' agents' requests (host_requests) and their copy
kept on the host (request_mirror), and the host's side, `relay serve --stdio` (serve), which runs a
whole session built by the factory its front end hands down (session/app.py's), so it imports nothing
above. Imports only the core below it (pyproject: contract "session-parts").
"""
