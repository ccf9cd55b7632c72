"""Upstreams whose work is asynchronous jobs: Suno relays, Kling, Vidu and PicWish."""
