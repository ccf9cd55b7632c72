"""The data directory on the local disk: owner-only files and directories (owner_only.py), and
allocating blocks before a file is mapped, telling a full disk from a bug (disk.py)."""
