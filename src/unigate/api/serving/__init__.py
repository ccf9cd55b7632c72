"""What every router shares: the routed request path (serve.py), relaying replies, presenting
them in another dialect, field checks, task families and their files, the media the gateway
serves itself."""
