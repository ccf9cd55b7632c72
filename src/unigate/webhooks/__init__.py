"""Outbound webhooks (`notify_hook`): Standard Webhooks v1 signing, an SSRF guard that checks the
address actually dialled, and a sender that never follows redirects.

Modules: `signing` (sign/verify, also the documented receiver-side verifier), `ssrf` (URL and
address policy, `GuardedResolver`), `sender` (`WebhookSender`, `DeliveryResult`, backoff).
"""
