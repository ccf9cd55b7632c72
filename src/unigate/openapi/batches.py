"""The batch APIs (`api/openai/batches.py`, `api/anthropic/batches.py`): OpenAI's Batch object
over an uploaded JSONL file and Anthropic's Message Batches with their JSONL results. The
create bodies are generated from their declarations (`shapes/batches.py`)."""

from __future__ import annotations

from unigate.openapi.schema import (
    Operation,
    Schema,
    array,
    const,
    declared_json,
    enum,
    integer,
    json_response,
    link,
    nullable_type,
    obj,
    query,
    ref,
    response,
    string,
)
from unigate.shapes.batches import BATCH, MESSAGE_BATCH

TAG = "text"
_ID = "$response.body#/id"


def schemas() -> dict[str, Schema]:
    stamp = nullable_type("integer")
    error = obj({"code": string(), "message": string(), "param": nullable_type("string"), "line": integer(0)})
    anthropic_time = nullable_type("string")
    return {
        "Batch": obj(
            {
                "id": string(),
                "object": const("batch"),
                "endpoint": string(),
                "errors": {"type": ["object", "null"], "properties": {"object": const("list"),
                                                                       "data": array(error)}},
                "input_file_id": string(),
                "completion_window": const("24h"),
                "status": enum("validating", "failed", "in_progress", "finalizing", "completed", "expired",
                               "cancelling", "cancelled"),
                "output_file_id": nullable_type("string"),
                "error_file_id": nullable_type("string"),
                "created_at": integer(0),
                "in_progress_at": stamp,
                "expires_at": integer(0),
                "finalizing_at": stamp,
                "completed_at": stamp,
                "failed_at": stamp,
                "expired_at": stamp,
                "cancelling_at": stamp,
                "cancelled_at": stamp,
                "request_counts": obj({"total": integer(0), "completed": integer(0), "failed": integer(0)},
                                      ["total", "completed", "failed"]),
                "metadata": nullable_type("object"),
            },
            ["id", "object", "endpoint", "input_file_id", "completion_window", "status", "created_at"],
        ),
        "BatchList": obj(
            {"object": const("list"), "data": array(ref("Batch")), "first_id": nullable_type("string"),
             "last_id": nullable_type("string"), "has_more": {"type": "boolean"}},
            ["object", "data", "has_more"],
        ),
        "MessageBatch": obj(
            {
                "id": string(),
                "type": const("message_batch"),
                "processing_status": enum("in_progress", "canceling", "ended"),
                "request_counts": obj(
                    {k: integer(0) for k in ("processing", "succeeded", "errored", "canceled", "expired")},
                    ["processing", "succeeded", "errored", "canceled", "expired"],
                ),
                "ended_at": anthropic_time,
                "created_at": string(),
                "expires_at": string(),
                "archived_at": anthropic_time,
                "cancel_initiated_at": anthropic_time,
                "results_url": anthropic_time,
            },
            ["id", "type", "processing_status", "request_counts", "created_at", "expires_at"],
        ),
        "MessageBatchList": obj(
            {"data": array(ref("MessageBatch")), "has_more": {"type": "boolean"},
             "first_id": nullable_type("string"), "last_id": nullable_type("string")},
            ["data", "has_more"],
        ),
        "MessageBatchDeleted": obj(
            {"id": string(), "type": const("message_batch_deleted")}, ["id", "type"]
        ),
    }  # fmt: skip


def operations() -> list[Operation]:
    openai_example = {
        "input_file_id": "file-abc123",
        "endpoint": "/v1/chat/completions",
        "completion_window": "24h",
    }
    anthropic_example = {
        "requests": [
            {"custom_id": "first", "params": {"model": "sandbox-chat", "max_tokens": 64,
                                              "messages": [{"role": "user", "content": "Hello"}]}}
        ]
    }  # fmt: skip
    batch = json_response("The batch.", ref("Batch"))
    message_batch = json_response("The message batch.", ref("MessageBatch"))
    return [
        Operation("POST", "/v1/batches", "createBatch", "Batch (OpenAI Batch API)", TAG, {"200": batch},
                  declared_json(BATCH, openai_example),
                  description="Runs every line of the input file as the same direct call (limits, budget, "
                  "fallback, usage), paced to a share of the key's limits.",
                  links={"retrieve": link("retrieveBatch", "The batch as it runs.", batch_id=_ID),
                         "cancel": link("cancelBatch", "Cancel it.", batch_id=_ID)}),
        Operation("GET", "/v1/batches", "listBatches", "The key's batches, newest first", TAG,
                  {"200": json_response("A page of batches.", ref("BatchList"))},
                  parameters=(query("after", string(), "A batch id: the page after it."),
                              query("limit", integer(1, 100), "Page size (default 20)."))),
        Operation("GET", "/v1/batches/{batch_id}", "retrieveBatch", "A batch", TAG, {"200": batch}),
        Operation("POST", "/v1/batches/{batch_id}/cancel", "cancelBatch", "Cancel a batch", TAG,
                  {"200": json_response("The batch, `cancelling` (then `cancelled`).", ref("Batch"))}),
        Operation("POST", "/v1/messages/batches", "createMessageBatch", "Message batch (Anthropic)", TAG,
                  {"200": message_batch}, declared_json(MESSAGE_BATCH, anthropic_example),
                  links={"retrieve": link("retrieveMessageBatch", "The batch as it runs.", batch_id=_ID),
                         "results": link("messageBatchResults", "Its results, once ended.", batch_id=_ID),
                         "cancel": link("cancelMessageBatch", "Cancel it.", batch_id=_ID),
                         "delete": link("deleteMessageBatch", "Delete it, once ended.", batch_id=_ID)}),
        Operation("GET", "/v1/messages/batches", "listMessageBatches", "The key's message batches", TAG,
                  {"200": json_response("A page of message batches.", ref("MessageBatchList"))},
                  parameters=(query("after_id", string(), "Older than this batch."),
                              query("before_id", string(), "Newer than this batch."),
                              query("limit", integer(1, 1000), "Page size (default 20)."))),
        Operation("GET", "/v1/messages/batches/{batch_id}", "retrieveMessageBatch", "A message batch", TAG,
                  {"200": message_batch}),
        Operation("DELETE", "/v1/messages/batches/{batch_id}", "deleteMessageBatch",
                  "Delete an ended message batch", TAG,
                  {"200": json_response("Deleted.", ref("MessageBatchDeleted"))}),
        Operation("POST", "/v1/messages/batches/{batch_id}/cancel", "cancelMessageBatch",
                  "Cancel a message batch", TAG, {"200": message_batch}),
        Operation("GET", "/v1/messages/batches/{batch_id}/results", "messageBatchResults",
                  "An ended message batch's results", TAG,
                  {"200": response("One JSON line per request, in input order.",
                                   {"application/x-jsonl": string("JSON Lines: {custom_id, result}.")})}),
    ]  # fmt: skip
