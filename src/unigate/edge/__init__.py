"""The ASGI edge, where requests enter and answers leave: ASGI plumbing (asgi.py), the
endpoint table (endpoints.py), the HTTP/1.1 server protocol (h1_protocol.py, h1_cycle.py,
h1_head.py) with a public endpoint's limits (server_guard.py), clients that leave
(client_gone.py), the access log (access_log.py), multipart bodies (multipart.py) and what
uploaded files are (media_types.py)."""
