"""`/v1/files` in process: uploads (fields before or after the file, purposes, expiry policies,
the size limit, the key's stored-bytes quota), owner scope, list paging and order, downloads of
the exact bytes, deletes, and expiry with its purge giving the bytes back."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.in_process import InProcessGateway
from unigate.files.model import DAY
from unigate.files.service import FileService
from unigate.store.key_storage import held

MAX_BYTES = 64 * 1024
QUOTA = 200_000
Json = dict[str, Any]


@pytest.fixture(scope="module")
def gw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[InProcessGateway]:
    config = {
        "sandbox": {"enabled": True},
        "files": {"max_bytes": MAX_BYTES},
        "limits": {"stored_bytes_per_key": QUOTA},
    }
    with InProcessGateway(tmp_path_factory.mktemp("files"), config) as gateway:
        yield gateway


@pytest.fixture
def key(gw: InProcessGateway) -> str:
    return gw.create_key()


def service(gw: InProcessGateway) -> FileService:
    assert gw.app is not None
    return gw.app.gateway.files


def new_key(gw: InProcessGateway) -> tuple[str, str]:
    """A key and its id (the owner of its files)."""
    record = gw.create_key_record()
    return str(record["key"]), str(record["id"])


def upload(
    gw: InProcessGateway,
    key: str,
    data: bytes,
    purpose: str | None = "batch",
    name: str = "input.jsonl",
    extra: Json | None = None,
    status: int = 200,
) -> Json:
    fields = {**({"purpose": purpose} if purpose is not None else {}), **(extra or {})}
    res = gw.request("POST", "/v1/files", key, data=fields, files={"file": (name, data)})
    assert res.status_code == status, res.text
    return dict(res.json())


def stored_objects(gw: InProcessGateway) -> list[str]:
    folder = Path(gw.settings.data_dir) / "files"
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


LINES = b'{"custom_id": "a", "method": "POST"}\n{"custom_id": "b", "method": "POST"}\n'


def test_a_batch_upload_is_a_file_object_with_openais_default_expiry(gw: InProcessGateway, key: str) -> None:
    before = int(time.time())
    f = upload(gw, key, LINES)
    assert f["id"].startswith("file-") and len(f["id"]) == 5 + 24
    assert f["object"] == "file" and f["purpose"] == "batch" and f["status"] == "processed"
    assert f["filename"] == "input.jsonl" and f["bytes"] == len(LINES)
    assert before <= f["created_at"] <= time.time()
    assert f["expires_at"] == f["created_at"] + 30 * DAY  # batch files expire after 30 days
    assert gw.request("GET", f"/v1/files/{f['id']}", key).json() == f
    content = gw.request("GET", f"/v1/files/{f['id']}/content", key)
    assert content.status_code == 200 and content.content == LINES
    assert content.headers["content-type"] == "application/jsonl"


def test_other_purposes_are_kept_and_downloaded_as_octets(gw: InProcessGateway, key: str) -> None:
    data = bytes(range(256)) * 100  # binary, several writes
    for purpose in ("user_data", "fine-tune", "assistants", "vision", "evals"):
        f = upload(gw, key, data, purpose, name="blob.bin")
        assert f["purpose"] == purpose and f["expires_at"] is None
        content = gw.request("GET", f"/v1/files/{f['id']}/content", key)
        assert content.content == data and content.headers["content-type"] == "application/octet-stream"


def test_a_purpose_outside_the_accepted_ones_is_a_400_naming_them(gw: InProcessGateway, key: str) -> None:
    for purpose in ("batch_output", "fine-tune-results", "nope"):
        err = upload(gw, key, LINES, purpose, status=400)["error"]
        assert err["param"] == "purpose"
        for accepted in ("assistants", "batch", "evals", "fine-tune", "user_data", "vision"):
            assert accepted in err["message"]
    assert upload(gw, key, LINES, None, status=400)["error"]["param"] == "purpose"
    assert stored_objects(gw) == sorted(stored_objects(gw))  # listing works; nothing checked here


def test_a_refused_form_leaves_no_object_behind(gw: InProcessGateway, key: str) -> None:
    before = stored_objects(gw)
    # The purpose after the file: the file is streamed before the purpose is known.
    body, content_type = _form([("file", ("x.jsonl", LINES)), ("purpose", "wrong")])
    res = gw.request(
        "POST", "/v1/files", key, content=_in_two(body, LINES), headers={"content-type": content_type}
    )
    assert res.status_code == 400 and res.json()["error"]["param"] == "purpose"
    assert stored_objects(gw) == before


@pytest.mark.parametrize("path", ["/v1/files", "/v1/images/edits"])
def test_a_malformed_form_is_a_400_in_both_readers(gw: InProcessGateway, key: str, path: str) -> None:
    """The streamed upload (files) and the spooled form (edge/multipart.py, images) map
    python-multipart's parse errors, imported only once a form arrives, to the same 400."""
    before = stored_objects(gw)
    body = b'--b\r\nContent-Disposition form-data; name="file"\r\n\r\nx\r\n--b--\r\n'  # no colon
    headers = {"content-type": "multipart/form-data; boundary=b"}
    res = gw.request("POST", path, key, content=body, headers=headers)
    assert res.status_code == 400, res.text
    assert res.json()["error"]["code"] == "invalid_multipart"
    assert res.json()["error"]["message"] == "The multipart body is malformed."
    assert stored_objects(gw) == before


def test_fields_after_the_file_are_read(gw: InProcessGateway, key: str) -> None:
    body, content_type = _form(
        [
            ("file", ("late.jsonl", LINES)),
            ("purpose", "user_data"),
            ("expires_after[anchor]", "created_at"),
            ("expires_after[seconds]", "7200"),
        ]
    )
    res = gw.request("POST", "/v1/files", key, content=body, headers={"content-type": content_type})
    assert res.status_code == 200, res.text
    f = res.json()
    assert f["purpose"] == "user_data" and f["filename"] == "late.jsonl" and f["bytes"] == len(LINES)
    assert f["expires_at"] == f["created_at"] + 7200


def test_a_missing_file_part_is_a_400(gw: InProcessGateway, key: str) -> None:
    res = gw.request("POST", "/v1/files", key, data={"purpose": "batch"}, files={"other": ("x", b"1")})
    assert res.status_code == 400 and res.json()["error"]["param"] == "other"
    body, content_type = _form([("purpose", "batch"), ("file", "not a file part")])
    res = gw.request("POST", "/v1/files", key, content=body, headers={"content-type": content_type})
    assert res.status_code == 400, res.text
    assert (
        res.json()["error"]["param"] == "file" and res.json()["error"]["code"] == "missing_required_parameter"
    )
    res = gw.request("POST", "/v1/files", key, json={"purpose": "batch"})
    assert res.status_code == 400 and res.json()["error"]["code"] == "invalid_content_type"


def test_expires_after_takes_openais_bounds(gw: InProcessGateway, key: str) -> None:
    f = upload(
        gw, key, LINES, extra={"expires_after[anchor]": "created_at", "expires_after[seconds]": "3600"}
    )
    assert f["expires_at"] == f["created_at"] + 3600
    f = upload(gw, key, LINES, "user_data", extra={"expires_after[anchor]": "created_at",
                                                  "expires_after[seconds]": str(30 * DAY)})  # fmt: skip
    assert f["expires_at"] == f["created_at"] + 30 * DAY
    for seconds in ("3599", str(30 * DAY + 1), "soon"):
        extra = {"expires_after[anchor]": "created_at", "expires_after[seconds]": seconds}
        assert upload(gw, key, LINES, extra=extra, status=400)["error"]["param"] == "expires_after.seconds"
    extra = {"expires_after[anchor]": "last_active_at", "expires_after[seconds]": "3600"}
    assert upload(gw, key, LINES, extra=extra, status=400)["error"]["param"] == "expires_after.anchor"
    only = upload(gw, key, LINES, extra={"expires_after[seconds]": "3600"}, status=400)["error"]
    assert only["param"] == "expires_after.anchor"


def test_another_key_gets_404_for_everything(gw: InProcessGateway, key: str) -> None:
    f = upload(gw, key, LINES)
    other = gw.create_key()
    for method, path in (
        ("GET", f"/v1/files/{f['id']}"),
        ("GET", f"/v1/files/{f['id']}/content"),
        ("DELETE", f"/v1/files/{f['id']}"),
    ):
        res = gw.request(method, path, other)
        assert res.status_code == 404, (method, path)
        err = res.json()["error"]
        assert err["type"] == "invalid_request_error" and err["code"] == "file_not_found"
        assert f["id"] in err["message"]
    assert gw.request("GET", "/v1/files", other).json()["data"] == []
    assert gw.request("GET", f"/v1/files/{f['id']}", key).status_code == 200  # still the owner's


def test_list_pages_in_both_orders_and_filters_by_purpose(gw: InProcessGateway, key: str) -> None:
    ids = [upload(gw, key, LINES, "batch" if i % 2 else "user_data")["id"] for i in range(5)]
    everything = gw.request("GET", "/v1/files", key).json()
    assert everything["object"] == "list" and everything["has_more"] is False
    assert [f["id"] for f in everything["data"]] == ids[::-1]  # newest first by default
    assert everything["first_id"] == ids[-1] and everything["last_id"] == ids[0]

    def walk(order: str) -> list[str]:
        seen: list[str] = []
        after = ""
        while True:
            page = gw.request("GET", f"/v1/files?limit=2&order={order}&after={after}", key).json()
            seen += [f["id"] for f in page["data"]]
            assert len(page["data"]) <= 2
            if not page["has_more"]:
                return seen
            after = page["last_id"]

    assert walk("asc") == ids and walk("desc") == ids[::-1]
    batch = gw.request("GET", "/v1/files?purpose=batch&order=asc", key).json()["data"]
    assert [f["id"] for f in batch] == ids[1::2]
    for bad in ("limit=0", "limit=10001", "order=sideways"):
        res = gw.request("GET", f"/v1/files?{bad}", key)
        assert res.status_code == 400 and res.json()["error"]["param"] == bad.split("=")[0]
    assert gw.request("GET", "/v1/files?limit=10000", key).status_code == 200
    assert gw.request("GET", "/v1/files?after=file-unknown", key).json()["data"] == []


def test_delete_removes_the_file_its_object_and_its_bytes(gw: InProcessGateway) -> None:
    key, owner = new_key(gw)
    f = upload(gw, key, LINES)
    assert gw.run(held(service(gw).store.engine, owner)) == len(LINES)
    assert f["id"] in stored_objects(gw)
    res = gw.request("DELETE", f"/v1/files/{f['id']}", key)
    assert res.status_code == 200 and res.json() == {"id": f["id"], "object": "file", "deleted": True}
    assert f["id"] not in stored_objects(gw)
    assert gw.run(held(service(gw).store.engine, owner)) == 0
    for method, path in (("GET", f"/v1/files/{f['id']}"), ("DELETE", f"/v1/files/{f['id']}")):
        assert gw.request(method, path, key).status_code == 404


def test_an_upload_past_the_size_limit_is_a_413(gw: InProcessGateway, key: str) -> None:
    assert upload(gw, key, b"x" * MAX_BYTES, "user_data")["bytes"] == MAX_BYTES
    before = stored_objects(gw)
    # Declared too large: refused before the body is read.
    big = b"x" * (MAX_BYTES + 4 * 1024 * 1024)
    err = upload(gw, key, big, "user_data", status=413)["error"]
    assert err["code"] == "request_too_large" and "files.max_bytes" in err["message"]
    # Within the form's allowance but past the file's limit: refused while it streams.
    err = upload(gw, key, b"x" * (MAX_BYTES + 1), "user_data", status=413)["error"]
    assert str(MAX_BYTES) in err["message"]
    assert stored_objects(gw) == before


def test_uploads_count_in_the_keys_stored_bytes_quota(gw: InProcessGateway, key: str) -> None:
    size = 60_000
    kept = [upload(gw, key, b"q" * size, "user_data")["id"] for _ in range(QUOTA // size)]
    before = stored_objects(gw)
    err = upload(gw, key, b"q" * size, "user_data", status=429)["error"]
    assert err["code"] == "storage_quota_exceeded" and "limits.stored_bytes_per_key" in err["message"]
    assert stored_objects(gw) == before
    assert gw.request("DELETE", f"/v1/files/{kept[0]}", key).status_code == 200
    upload(gw, key, b"q" * size, "user_data")  # the delete gave the room back
    assert upload(gw, gw.create_key(), b"q" * size, "user_data")["bytes"] == size  # per key


def test_an_expired_file_is_gone_and_the_purge_gives_its_bytes_back(gw: InProcessGateway) -> None:
    key, owner = new_key(gw)
    files = service(gw)

    async def chunks() -> Any:
        yield b"old"
        yield b" bytes\n"

    async def make() -> Any:
        return await files.create(owner, "batch", "old.jsonl", chunks(), expires_at=int(time.time()) - 1)

    expired = gw.run(make())
    kept = upload(gw, key, LINES)
    assert gw.run(held(files.store.engine, owner)) == len(b"old bytes\n") + len(LINES)
    for path in (f"/v1/files/{expired.id}", f"/v1/files/{expired.id}/content"):
        assert gw.request("GET", path, key).status_code == 404
    assert [f["id"] for f in gw.request("GET", "/v1/files", key).json()["data"]] == [kept["id"]]
    assert expired.id in stored_objects(gw)
    assert gw.run(files.purge_expired()) >= 1
    assert expired.id not in stored_objects(gw) and kept["id"] in stored_objects(gw)
    assert gw.run(held(files.store.engine, owner)) == len(LINES)


def test_lines_split_the_stored_bytes_on_newlines(gw: InProcessGateway) -> None:
    _, owner = new_key(gw)
    files = service(gw)
    data = b'{"a": 1}\n\n' + b'{"long": "' + b"z" * 150_000 + b'"}\n{"last": true}'

    async def run() -> list[bytes]:
        async def chunks() -> Any:
            for i in range(0, len(data), 1000):
                yield data[i : i + 1000]

        f = await files.create(owner, "batch_output", "l.jsonl", chunks())
        read = b"".join([c async for c in files.read(f)])
        assert read == data
        return [line async for line in files.lines(f)]

    assert gw.run(run()) == data.split(b"\n")


async def _in_two(body: bytes, at: bytes) -> AsyncIterator[bytes]:
    """The body in two pieces, cut where `at` starts (the file's bytes): what comes after the
    file arrives only once the file has started streaming."""
    cut = body.index(at)
    yield body[:cut]
    yield body[cut:]


def _form(parts: list[tuple[str, str | tuple[str, bytes]]]) -> tuple[bytes, str]:
    boundary = "unigate-files-test"
    out = b""
    for name, value in parts:
        if isinstance(value, tuple):
            head = f'Content-Disposition: form-data; name="{name}"; filename="{value[0]}"\r\n'
            head += "Content-Type: application/octet-stream\r\n"
            out += f"--{boundary}\r\n{head}\r\n".encode() + value[1] + b"\r\n"
        else:
            out += (
                f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'.encode()
            )
    out += f"--{boundary}--\r\n".encode()
    return out, f"multipart/form-data; boundary={boundary}"


def test_the_gemini_download_path_under_v1_files_stays_geminis(gw: InProcessGateway, key: str) -> None:
    res = gw.request("GET", "/v1/files/abc:download?alt=media", key)
    assert res.status_code == 404
    assert res.json()["error"]["status"] == "NOT_FOUND"  # the Gemini API's shape, not a file_not_found


def test_an_expiry_policy_split_around_the_file_is_read_whole(gw: InProcessGateway, key: str) -> None:
    body, content_type = _form(
        [
            ("purpose", "user_data"),
            ("expires_after[anchor]", "created_at"),
            ("file", ("split.txt", b"split\n")),
            ("expires_after[seconds]", "5400"),
        ]
    )
    res = gw.request(
        "POST", "/v1/files", key, content=_in_two(body, b"split\n"), headers={"content-type": content_type}
    )
    assert res.status_code == 200, res.text
    assert res.json()["expires_at"] == res.json()["created_at"] + 5400
