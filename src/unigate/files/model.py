"""A stored file and the purposes a file may have, as OpenAI's Files API names them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# What a client may upload with (`POST /v1/files`'s `purpose`).
UPLOAD_PURPOSES = ("assistants", "batch", "evals", "fine-tune", "user_data", "vision")
# What the gateway itself creates: a batch's output and error files.
OUTPUT_PURPOSES = ("batch_output",)
PURPOSES = UPLOAD_PURPOSES + OUTPUT_PURPOSES

DAY = 86400
# OpenAI's default expiry by purpose: batch input and output files expire after 30 days, the
# others are kept until deleted (`files.retention_days` may give those one too).
DEFAULT_EXPIRY = {"batch": 30 * DAY, "batch_output": 30 * DAY}
# The bounds of `expires_after[seconds]`: one hour to 30 days.
MIN_EXPIRY, MAX_EXPIRY = 3600, 30 * DAY
PROCESSED = "processed"


@dataclass(frozen=True, slots=True)
class StoredFile:
    id: str  # "file-" + 24 hex characters
    owner: str  # the owner's key id
    purpose: str
    filename: str
    bytes: int
    created_at: int  # unix seconds
    expires_at: int | None
    status: str  # "processed"

    def public(self) -> dict[str, Any]:
        """OpenAI's FileObject."""
        return {
            "id": self.id,
            "object": "file",
            "bytes": self.bytes,
            "created_at": self.created_at,
            "expires_at": self.expires_at,
            "filename": self.filename,
            "purpose": self.purpose,
            "status": self.status,
            "status_details": None,
        }
