"""The `unigate` command."""
