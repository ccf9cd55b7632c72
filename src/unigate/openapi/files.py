"""The Files API (`api/openai/files.py`, the `openai` SDK's `files` client): upload, list,
retrieve, download and delete. The upload form is declared in `shapes/files.py`."""

from __future__ import annotations

from unigate.files.model import PURPOSES
from unigate.openapi.schema import (
    Operation,
    Schema,
    array,
    binary,
    boolean,
    const,
    declared_form,
    deleted,
    enum,
    integer,
    json_response,
    link,
    nullable,
    obj,
    page_parameters,
    query,
    ref,
    response,
    string,
)
from unigate.shapes.files import UPLOAD

TAG = "files"


def schemas() -> dict[str, Schema]:
    file = obj(
        {
            "id": string("file-…"),
            "object": const("file"),
            "bytes": integer(0),
            "created_at": integer(0, description="Unix seconds."),
            "expires_at": nullable(integer(0, description="Unix seconds; null: kept until deleted.")),
            "filename": string(),
            "purpose": enum(*PURPOSES),
            "status": enum("uploaded", "processed", "error"),
            "status_details": nullable(string()),
        },
        ["id", "object", "bytes", "created_at", "expires_at", "filename", "purpose", "status"],
        "OpenAI's FileObject.",
    )
    return {
        "FileObject": file,
        "FileList": obj(
            {
                "object": const("list"),
                "data": array(ref("FileObject")),
                "first_id": nullable(string()),
                "last_id": nullable(string()),
                "has_more": boolean(),
            },
            ["object", "data", "first_id", "last_id", "has_more"],
        ),
    }


def _links() -> dict[str, Schema]:
    file_id = "$response.body#/id"
    return {
        "retrieve": link("retrieveFile", "The file's object.", file_id=file_id),
        "content": link("downloadFile", "The file's bytes.", file_id=file_id),
        "delete": link("deleteFile", "Delete it.", file_id=file_id),
    }


def operations() -> list[Operation]:
    return [
        Operation(
            "POST",
            "/v1/files",
            "createFile",
            "Upload a file",
            TAG,
            {"200": json_response("The stored file.", ref("FileObject"))},
            declared_form(UPLOAD, {"purpose": "batch"}),
            description=(
                "Streamed to the file store; 413 past `files.max_bytes`, 429 storage_quota_exceeded past the "
                "key's stored bytes. Batch files expire after 30 days unless `expires_after` says otherwise."
            ),
            links=_links(),
        ),
        Operation(
            "GET",
            "/v1/files",
            "listFiles",
            "The key's files",
            TAG,
            {"200": json_response("One page.", ref("FileList"))},
            parameters=(
                query("purpose", string(), "Only files with this purpose."),
                *page_parameters("file", 10000, 10000),
            ),
        ),
        Operation(
            "GET",
            "/v1/files/{file_id}",
            "retrieveFile",
            "One file",
            TAG,
            {"200": json_response("The file.", ref("FileObject"))},
        ),
        Operation(
            "DELETE",
            "/v1/files/{file_id}",
            "deleteFile",
            "Delete a file",
            TAG,
            {
                "200": json_response(
                    "Deleted.",
                    deleted("file"),
                )
            },
        ),
        Operation(
            "GET",
            "/v1/files/{file_id}/content",
            "downloadFile",
            "A file's bytes",
            TAG,
            {
                "200": response(
                    "The bytes as uploaded.",
                    {"application/octet-stream": binary(), "application/jsonl": binary()},
                )
            },
            description="application/jsonl for batch files, application/octet-stream otherwise.",
        ),
    ]
