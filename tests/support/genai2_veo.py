"""Run by the Veo end-to-end test under google-genai 2.34.0 (its own venv, `.venv-genai2`):
the SDK's documented loop, `models.generate_videos` then `operations.get` until `done`, then
a download of each video `uri` with the caller's key. Prints one JSON object for the test.

Usage: python genai2_veo.py BASE_URL KEY MODEL PROMPT OUT_DIR [IMAGE_PNG_PATH]
(the videos are written to OUT_DIR/video-<n>.mp4)
"""

from __future__ import annotations

import json
import sys
import time
import urllib.request

from google import genai
from google.genai import types


def main() -> None:
    base_url, key, model, prompt, out_dir = sys.argv[1:6]
    image_path = sys.argv[6] if len(sys.argv) > 6 else None
    client = genai.Client(api_key=key, http_options=types.HttpOptions(base_url=base_url))
    image = None
    if image_path:
        with open(image_path, "rb") as f:
            image = types.Image(image_bytes=f.read(), mime_type="image/png")
    operation = client.models.generate_videos(
        model=model,
        prompt=prompt,
        image=image,
        config=types.GenerateVideosConfig(number_of_videos=1, duration_seconds=2, aspect_ratio="16:9"),
    )
    polls = 0
    while not operation.done:
        time.sleep(0.3)
        operation = client.operations.get(operation)
        polls += 1
    videos: list[dict[str, object]] = []
    if operation.response and operation.response.generated_videos:
        for n, generated in enumerate(operation.response.generated_videos):
            assert generated.video is not None and generated.video.uri
            request = urllib.request.Request(generated.video.uri, headers={"x-goog-api-key": key})
            with urllib.request.urlopen(request, timeout=60) as resp:
                data = resp.read()
            path = f"{out_dir}/video-{n}.mp4"
            with open(path, "wb") as f:
                f.write(data)
            videos.append({"uri": generated.video.uri, "path": path})
    result = {"name": operation.name, "polls": polls, "error": operation.error, "videos": videos}
    print(json.dumps(result, default=str))


if __name__ == "__main__":
    main()
