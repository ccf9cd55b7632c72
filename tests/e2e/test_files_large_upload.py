"""A 200 MB upload to a real `unigate serve` (one worker), generated on the fly and streamed:
the worker's resident memory stays flat while the file is received and written to the file
store, and again while it is downloaded; the bytes come back exactly (compared by hash)."""

from __future__ import annotations

import hashlib
import http.client
import os
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from tests.support.gateway import GatewayProcess

MB = 1024 * 1024
SIZE = 200 * MB
BOUNDARY = "unigate-large-upload"


def _rss_mb(gw: GatewayProcess) -> float:
    assert gw.proc is not None
    for line in Path(f"/proc/{gw.proc.pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def _cpu_seconds(gw: GatewayProcess) -> float:
    """The worker's user + system CPU time so far."""
    assert gw.proc is not None
    fields = Path(f"/proc/{gw.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _lines() -> Iterator[bytes]:
    """SIZE bytes of JSON Lines, made as they are sent (1 MiB at a time)."""
    content = b"x" * 200
    line = b'{"custom_id": "%08d", "body": {"messages": [{"role": "user", "content": "' + content + b'"}]}}\n'
    sent, n = 0, 0
    while sent < SIZE:
        block = b"".join(line % (n + i) for i in range(4096))[: min(MB, SIZE - sent)]
        n += 4096
        sent += len(block)
        yield block


@pytest.mark.process  # the server process's own memory
def test_a_200_mb_upload_and_download_keep_the_workers_memory_flat(tmp_path: Path) -> None:
    with GatewayProcess(tmp_path, config={"sandbox": {"enabled": True}}, workers=1) as gw:
        key = gw.create_key()
        head = (
            f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="purpose"\r\n\r\nbatch\r\n'
            f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="big.jsonl"\r\n'
            "Content-Type: application/jsonl\r\n\r\n"
        ).encode()
        tail = f"\r\n--{BOUNDARY}--\r\n".encode()
        host, port = gw.base_url.removeprefix("http://").split(":")
        conn = http.client.HTTPConnection(host, int(port), timeout=120)
        conn.putrequest("POST", "/v1/files")
        conn.putheader("Authorization", f"Bearer {key}")
        conn.putheader("Content-Type", f"multipart/form-data; boundary={BOUNDARY}")
        conn.putheader("Content-Length", str(len(head) + SIZE + len(tail)))
        conn.endheaders()
        before = _rss_mb(gw)
        cpu_start = _cpu_seconds(gw)
        peak_up = before
        digest = hashlib.sha256()
        conn.send(head)
        for i, block in enumerate(_lines()):
            digest.update(block)
            conn.send(block)
            if i % 8 == 0:
                peak_up = max(peak_up, _rss_mb(gw))
        conn.send(tail)
        res = conn.getresponse()
        body = res.read()
        assert res.status == 200, body
        created = orjson.loads(body)
        assert created["bytes"] == SIZE and created["purpose"] == "batch"
        after_up = _rss_mb(gw)
        cpu_up = _cpu_seconds(gw) - cpu_start

        conn.request("GET", f"/v1/files/{created['id']}/content", headers={"Authorization": f"Bearer {key}"})
        res = conn.getresponse()
        assert res.status == 200 and int(res.getheader("content-length") or 0) == SIZE
        back = hashlib.sha256()
        peak_down = after_up
        got = 0
        while chunk := res.read(MB):
            back.update(chunk)
            got += len(chunk)
            if got % (8 * MB) < MB:
                peak_down = max(peak_down, _rss_mb(gw))
        conn.close()
        cpu_down = _cpu_seconds(gw) - cpu_start - cpu_up
        assert got == SIZE and back.hexdigest() == digest.hexdigest()
    print(
        f"\nworker RSS: {before:.1f} MB before, peak {peak_up:.1f} MB during the 200 MB upload, "
        f"{after_up:.1f} MB after it, peak {peak_down:.1f} MB during the download; worker CPU "
        f"{cpu_up:.2f} s for the upload, {cpu_down:.2f} s for the download"
    )
    assert peak_up - before < 25, f"the worker's RSS grew {peak_up - before:.1f} MB during the upload"
    assert peak_down - before < 25, f"the worker's RSS grew {peak_down - before:.1f} MB during the download"
