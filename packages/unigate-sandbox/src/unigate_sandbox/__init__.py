"""unigate's offline sandbox: a deterministic stand-in for every family's upstream (text,
embeddings, moderations, real audio, images, video and music, asynchronous jobs), so the whole
API works on a fresh machine and in tests. Core finds it through its provider plugin
(plugin.py); the adapter is `provider.SandboxProvider`."""
