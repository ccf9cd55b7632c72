"""What keeps several gateway processes (workers, replicas) consistent with each other:
the fan-out of changes (fanout.py) over Redis pub/sub (channel.py) and the database."""
