"""The ASGI edge, where requests enter and answers leave: ASGI plumbing (asgi.py), the
endpoint table (endpoints.py), uvicorn's protocol with a public endpoint's limits
(server_guard.py), clients that leave (client_gone.py), the access log (access_log.py),
multipart bodies (multipart.py) and what uploaded files are (media_types.py)."""
