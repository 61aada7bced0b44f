"""The operator's side of other hosts: one ssh channel per host and what is asked of it (remote),
sends to `HOST/kind:name` (remote_send), hosts' agents' requests (host_requests) and their copy
kept on the host (request_mirror). The host's side, `relay serve --stdio`, is session/serve.py:
it builds a whole session (app), so it sits above. Imports only the core below it (pyproject:
contract "session-parts").
"""
