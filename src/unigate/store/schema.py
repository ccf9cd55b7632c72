"""Table definitions shared by the stores and the migrations' autogenerate checks."""

from __future__ import annotations

import sqlalchemy as sa

metadata = sa.MetaData()

api_keys = sa.Table(
    "api_keys",
    metadata,
    sa.Column("id", sa.String(40), primary_key=True),
    sa.Column("name", sa.String(200), nullable=False),
    sa.Column("key_hash", sa.String(64), nullable=False, unique=True),
    sa.Column("prefix", sa.String(16), nullable=False),
    sa.Column("models", sa.Text, nullable=False),  # JSON list of globs; empty = all
    sa.Column("families", sa.Text, nullable=False),  # JSON list; empty = all
    sa.Column("rpm", sa.Integer, nullable=True),
    sa.Column("tpm", sa.Integer, nullable=True),
    sa.Column("budget", sa.Float, nullable=True),
    sa.Column("budget_period", sa.String(10), nullable=False, server_default="total"),
    sa.Column("expires_at", sa.Float, nullable=True),
    sa.Column("revoked_at", sa.Float, nullable=True),
    sa.Column("created_at", sa.Float, nullable=False),
    sa.Column("webhook_secret", sa.String(80), nullable=False),
)

# Append-only change feed (store/changes.py): key changes, whose cached copies every process
# drops, and config reloads, which every process applies (cluster/fanout.py reads it).
key_events = sa.Table(
    "key_events",
    metadata,
    sa.Column("seq", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("key_id", sa.String(40), nullable=False),
    sa.Column("key_hash", sa.String(64), nullable=False),
    sa.Column("at", sa.Float, nullable=False),
    sa.Column("kind", sa.String(10), nullable=False, server_default="key"),  # key | config
    sa.Column("origin", sa.String(120), nullable=False, server_default=""),  # the worker that wrote it
)

usage_records = sa.Table(
    "usage_records",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("request_id", sa.String(40), nullable=False),
    sa.Column("key_id", sa.String(40), nullable=False, index=True),
    sa.Column("endpoint", sa.String(60), nullable=False),
    sa.Column("model", sa.String(200), nullable=False),
    sa.Column("provider", sa.String(100), nullable=False),
    sa.Column("upstream_model", sa.String(200), nullable=False),
    sa.Column("status", sa.Integer, nullable=False),
    sa.Column("prompt_tokens", sa.Integer, nullable=False),
    sa.Column("completion_tokens", sa.Integer, nullable=False),
    sa.Column("latency_ms", sa.Float, nullable=False),
    sa.Column("cost", sa.Float, nullable=False),
    sa.Column("created_at", sa.Float, nullable=False, index=True),
    sa.Column("requests", sa.Integer, nullable=False, server_default="1"),  # requests in this row
    sa.Column("batch", sa.String(64), nullable=False, server_default=""),  # a batch line's batch id
)

# The newest requests, one row each, for the dashboard (usage/request_log.py keeps it bounded).
request_log = sa.Table(
    "request_log",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("created_at", sa.Float, nullable=False, index=True),
    sa.Column("request_id", sa.String(40), nullable=False),
    sa.Column("method", sa.String(10), nullable=False),
    sa.Column("path", sa.String(300), nullable=False),
    sa.Column("status", sa.Integer, nullable=False),
    sa.Column("latency_ms", sa.Float, nullable=False),
    sa.Column("model", sa.String(200), nullable=False),
    sa.Column("route", sa.String(300), nullable=False),
    sa.Column("key_id", sa.String(40), nullable=False),
    sa.Column("outcome", sa.Integer, nullable=True),  # a stream's in-band end (499, 502)
    sa.Column("error", sa.String(300), nullable=False, server_default=""),  # "code: message"
    sa.Index("ix_request_log_key", "key_id", "created_at"),
)

# --- asynchronous tasks (one engine for every async family) ---

tasks = sa.Table(
    "tasks",
    metadata,
    sa.Column("id", sa.String(40), primary_key=True),  # public id (UUID)
    sa.Column("key_id", sa.String(40), nullable=False),  # owner
    sa.Column("family", sa.String(20), nullable=False),
    sa.Column("action", sa.String(60), nullable=False),
    sa.Column("model", sa.String(200), nullable=False),
    sa.Column("provider", sa.String(100), nullable=False),
    sa.Column("upstream_id", sa.String(200), nullable=False),
    sa.Column("status", sa.String(20), nullable=False),
    sa.Column("progress", sa.Integer, nullable=False),
    sa.Column("fail_reason", sa.Text, nullable=False),
    sa.Column("submit_time", sa.Integer, nullable=False),
    sa.Column("start_time", sa.Integer, nullable=False),
    sa.Column("finish_time", sa.Integer, nullable=False),
    sa.Column("notify_hook", sa.Text, nullable=False),
    sa.Column("request", sa.Text, nullable=False),  # JSON: the validated submit fields
    sa.Column("result", sa.Text, nullable=False),  # JSON: upstream result (clips, lyrics, ...)
    sa.Column("clip_ids", sa.Text, nullable=False),  # JSON list of public clip ids (fetch = one read)
    sa.Column("public_base", sa.Text, nullable=False),  # base URL for gateway-served media
    sa.Column("price", sa.Float, nullable=False),
    sa.Column("version", sa.Integer, nullable=False),  # compare-and-set guard
    sa.Column("poll_attempts", sa.Integer, nullable=False),
    sa.Column("next_poll_at", sa.Float, nullable=False),
    sa.Column("lease_owner", sa.String(64), nullable=True),
    sa.Column("lease_until", sa.Float, nullable=False),
    sa.Column("deadline_at", sa.Float, nullable=False),
    sa.Column("created_at", sa.Float, nullable=False),
    sa.Column("updated_at", sa.Float, nullable=False),
    # The client's own id for the task (Kling's external_task_id); "" when none.
    sa.Column("external_id", sa.String(200), nullable=False, server_default=""),
    sa.Index("ix_tasks_due", "status", "next_poll_at"),
    sa.Index("ix_tasks_key", "key_id"),
    sa.Index("ix_tasks_key_family", "key_id", "family", "created_at"),
    sa.Index("ix_tasks_external", "key_id", "external_id"),
    sa.Index("ix_tasks_created", "created_at"),  # the admin list, newest first
)

# Public clip ids of a task, and the upstream clip each maps to once known. A continuation
# of a clip is sent to the provider (channel) that produced it.
task_clips = sa.Table(
    "task_clips",
    metadata,
    sa.Column("clip_id", sa.String(40), primary_key=True),
    sa.Column("task_id", sa.String(40), nullable=False, index=True),
    sa.Column("key_id", sa.String(40), nullable=False),
    sa.Column("position", sa.Integer, nullable=False),
    sa.Column("provider", sa.String(100), nullable=False),
    sa.Column("upstream_clip_id", sa.String(200), nullable=True),
)

# Money moved for a task; the unique (task_id, kind) makes a refund happen at most once.
billing_ledger = sa.Table(
    "billing_ledger",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("key_id", sa.String(40), nullable=False, index=True),
    sa.Column("task_id", sa.String(40), nullable=False),
    sa.Column("kind", sa.String(10), nullable=False),  # reserve | refund
    sa.Column("amount", sa.Float, nullable=False),
    sa.Column("created_at", sa.Float, nullable=False),
    sa.UniqueConstraint("task_id", "kind", name="uq_billing_task_kind"),
)

# Webhook events to deliver, written in the same transaction as the change they report.
webhook_outbox = sa.Table(
    "webhook_outbox",
    metadata,
    sa.Column("id", sa.String(40), primary_key=True),  # webhook-id, stable across retries
    sa.Column("task_id", sa.String(40), nullable=False, index=True),
    sa.Column("key_id", sa.String(40), nullable=False),
    sa.Column("url", sa.Text, nullable=False),
    sa.Column("payload", sa.Text, nullable=False),
    sa.Column("state", sa.String(12), nullable=False),  # pending|delivered|failed|gone|skipped
    sa.Column("attempts", sa.Integer, nullable=False),
    sa.Column("next_attempt_at", sa.Float, nullable=False),
    sa.Column("lease_until", sa.Float, nullable=False),
    sa.Column("last_error", sa.Text, nullable=False),
    sa.Column("created_at", sa.Float, nullable=False),
    sa.Column("delivered_at", sa.Float, nullable=True),
    sa.Index("ix_outbox_due", "state", "next_attempt_at"),
)

# Idempotency-Key of task submits, per API key: written in the same transaction as the task
# it created, so a retry after a crash finds that task. A row without a task is a submit in
# flight (`claim` names the request holding it until `lease_until`).
idempotency_keys = sa.Table(
    "idempotency_keys",
    metadata,
    sa.Column("key_id", sa.String(40), nullable=False),
    sa.Column("idempotency_key", sa.String(255), nullable=False),
    sa.Column("fingerprint", sa.String(64), nullable=False),  # SHA-256 of the validated submit
    sa.Column("task_id", sa.String(40), nullable=True),
    sa.Column("claim", sa.String(32), nullable=False),
    sa.Column("lease_until", sa.Float, nullable=False),
    sa.Column("created_at", sa.Float, nullable=False),
    sa.UniqueConstraint("key_id", "idempotency_key", name="uq_idempotency_key"),
    sa.Index("ix_idempotency_created", "created_at"),
    sa.Index("ix_idempotency_task", "task_id"),
)

# --- the Responses API's stored responses (api/openai/responses.py, responses/store.py) ---

# One row per stored response: the Response object as answered and the input items it was
# given, so `previous_response_id` rebuilds a conversation from rows alone (walking
# `previous_id`). Written before the call's final answer is sent.
responses = sa.Table(
    "responses",
    metadata,
    sa.Column("id", sa.String(64), primary_key=True),  # resp_…, or a native upstream's own id
    sa.Column("key_id", sa.String(40), nullable=False),  # owner
    sa.Column("model", sa.String(200), nullable=False),
    sa.Column("provider", sa.String(100), nullable=False),  # the provider that answered
    sa.Column("native", sa.Boolean, nullable=False),  # answered by that upstream's own Responses API
    sa.Column("status", sa.String(20), nullable=False),
    sa.Column("previous_id", sa.String(64), nullable=True),
    sa.Column("background", sa.Boolean, nullable=False),
    sa.Column("request", sa.Text, nullable=False),  # background: the create request to run; else ""
    sa.Column("body", sa.Text, nullable=False),  # JSON: the Response object
    sa.Column("input", sa.Text, nullable=False),  # JSON: the input items, with ids
    sa.Column("lease_owner", sa.String(64), nullable=True),  # background: the worker running it
    sa.Column("lease_until", sa.Float, nullable=False),
    sa.Column("created_at", sa.Float, nullable=False),
    sa.Column("updated_at", sa.Float, nullable=False),
    # Bytes this row holds (its columns and its events): what it counts in `key_storage`.
    sa.Column("size_bytes", sa.BigInteger, nullable=False, server_default="0"),
    # The conversation through this response (every turn's input and output), in bytes and in
    # tokens: what a continuation would load, checked before it loads anything.
    sa.Column("context_bytes", sa.BigInteger, nullable=False, server_default="0"),
    sa.Column("context_tokens", sa.BigInteger, nullable=False, server_default="0"),
    sa.Index("ix_responses_created", "created_at"),  # the retention purge
    sa.Index("ix_responses_due", "status", "lease_until"),  # background work to pick up
)

# A background response's stream events, replayed by `GET /v1/responses/{id}?stream=true`.
response_events = sa.Table(
    "response_events",
    metadata,
    sa.Column("response_id", sa.String(64), primary_key=True),
    sa.Column("sequence_number", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("data", sa.Text, nullable=False),  # the whole SSE event (event: and data: lines)
)

# Bytes of stored state each key holds (stored responses with their events), kept in the same
# transactions that store and delete it: the per-key storage quota is one point read.
key_storage = sa.Table(
    "key_storage",
    metadata,
    sa.Column("key_id", sa.String(40), primary_key=True),
    sa.Column("bytes", sa.BigInteger, nullable=False),
)

# A batch the gateway runs (`/v1/batches`, `/v1/messages/batches`): its state, its counts (kept
# in the transactions that commit its lines) and the lease of the worker running it.
batches = sa.Table(
    "batches",
    metadata,
    sa.Column("id", sa.String(64), primary_key=True),  # batch_… or msgbatch_…
    sa.Column("key_id", sa.String(40), nullable=False),  # owner
    sa.Column("api", sa.String(12), nullable=False),  # openai | anthropic: the shape it answers in
    sa.Column("endpoint", sa.String(60), nullable=False),  # every line's path
    sa.Column("status", sa.String(20), nullable=False),
    sa.Column("input_file_id", sa.String(64), nullable=False, server_default=""),
    sa.Column("output_file_id", sa.String(64), nullable=False, server_default=""),
    sa.Column("error_file_id", sa.String(64), nullable=False, server_default=""),
    sa.Column("metadata", sa.Text, nullable=False, server_default="null"),  # JSON
    sa.Column("errors", sa.Text, nullable=False, server_default="null"),  # JSON: the input's bad lines
    sa.Column("total", sa.Integer, nullable=False, server_default="0"),
    sa.Column("succeeded", sa.Integer, nullable=False, server_default="0"),
    sa.Column("errored", sa.Integer, nullable=False, server_default="0"),
    sa.Column("canceled", sa.Integer, nullable=False, server_default="0"),
    sa.Column("expired", sa.Integer, nullable=False, server_default="0"),
    sa.Column("created_at", sa.Float, nullable=False),
    sa.Column("expires_at", sa.Float, nullable=False),
    sa.Column("in_progress_at", sa.Float, nullable=True),
    sa.Column("finalizing_at", sa.Float, nullable=True),
    sa.Column("cancelling_at", sa.Float, nullable=True),
    sa.Column("ended_at", sa.Float, nullable=True),  # completed, failed, expired or cancelled
    # A native relay's "provider/id"; "provider/" while its submit is under way (no id stored yet).
    sa.Column("upstream", sa.Text, nullable=False, server_default=""),
    sa.Column("lease_owner", sa.String(64), nullable=True),
    sa.Column("lease_until", sa.Float, nullable=False),
    sa.Column("updated_at", sa.Float, nullable=False),
    sa.Column("submitting_at", sa.Float, nullable=True),  # when a native relay's submit began
    sa.Index("ix_batches_key", "key_id", "created_at"),
    sa.Index("ix_batches_due", "status", "lease_until"),
)

# One line of a batch: its request, and once done its result, written in the same transaction
# as its state, so a line is done exactly when its result is stored.
batch_lines = sa.Table(
    "batch_lines",
    metadata,
    sa.Column("batch_id", sa.String(64), primary_key=True),
    sa.Column("idx", sa.Integer, primary_key=True, autoincrement=False),  # 0-based, input order
    sa.Column("custom_id", sa.Text, nullable=False),
    sa.Column("body", sa.Text, nullable=False),  # JSON: the request body
    sa.Column("state", sa.String(10), nullable=False),  # pending|succeeded|errored|canceled|expired
    sa.Column("status_code", sa.Integer, nullable=False, server_default="0"),
    sa.Column("request_id", sa.String(64), nullable=False, server_default=""),
    sa.Column("result", sa.Text, nullable=False, server_default=""),  # JSON: the response body
)
