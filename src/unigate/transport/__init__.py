"""The gateway's own HTTP/1.1 client for upstream calls: pooled keep-alive connections
(pool.py), one connection each (connection.py), responses (response.py), dialing (dial.py)."""
