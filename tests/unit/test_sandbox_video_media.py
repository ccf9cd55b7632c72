"""The sandbox provider's video media: generated MP4s, thumbnails, spritesheets, probing,
sound effects and lip-sync (pure functions, checked by decoding their output with PyAV)."""

from __future__ import annotations

import io
import math
import struct
import wave
from array import array
from concurrent.futures import ThreadPoolExecutor
from itertools import pairwise

import av
import pytest
from PIL import Image, ImageChops, ImageOps, ImageStat

from unigate_sandbox.media import SPEECH_RATE, encode_stream, generate_image, synthesize
from unigate_sandbox.media.lipsync import lip_sync
from unigate_sandbox.media.sound import SFX_RATE, render_sound_effect, texture_of
from unigate_sandbox.media.video import (
    VideoInfo,
    VideoInvalid,
    faststart,
    probe_video,
    render_video,
    video_spritesheet,
    video_thumbnail,
)

PROMPT = "A lighthouse on a cliff at night, waves crashing below"

# --- helpers ---------------------------------------------------------------------------


def top_boxes(data: bytes) -> list[bytes]:
    """The types of an MP4's top-level boxes, in file order."""
    kinds, position = [], 0
    while position + 8 <= len(data):
        size, kind = struct.unpack_from(">I4s", data, position)
        if size == 1:
            (size,) = struct.unpack_from(">Q", data, position + 8)
        kinds.append(kind)
        position += size or len(data) - position
    return kinds


def frames_of(data: bytes) -> list[Image.Image]:
    with av.open(io.BytesIO(data), mode="r") as container:
        return [frame.to_image() for frame in container.decode(video=0)]  # type: ignore[no-untyped-call]


def video_stream_info(data: bytes) -> tuple[str, str, int, int, int, float]:
    """(codec, pixel format, width, height, frame count, frame rate) from the container."""
    with av.open(io.BytesIO(data), mode="r") as container:
        stream = container.streams.video[0]
        assert stream.average_rate is not None
        context = stream.codec_context
        return (
            context.name,
            str(context.pix_fmt),
            context.width,
            context.height,
            stream.frames,
            float(stream.average_rate),
        )


def envelope(data: bytes, window: float = 0.1) -> list[float]:
    """RMS of consecutive windows of the first audio stream, decoded to mono 8 kHz."""
    rate = 8_000
    samples = array("h")
    with av.open(io.BytesIO(data), mode="r") as container:
        resampler = av.AudioResampler(format="s16", layout="mono", rate=rate)
        for frame in container.decode(audio=0):
            for piece in resampler.resample(frame):
                samples.frombytes(bytes(piece.planes[0])[: 2 * piece.samples])
    size = round(window * rate)
    return [rms(samples[start : start + size]) for start in range(0, len(samples) - size + 1, size)]


def audio_seconds(data: bytes) -> float:
    with av.open(io.BytesIO(data), mode="r") as container:
        stream = container.streams.audio[0]
        return sum(frame.samples for frame in container.decode(stream)) / stream.codec_context.sample_rate


def rms(samples: array[int]) -> float:
    return math.sqrt(sum(v * v for v in samples) / max(1, len(samples)))


def correlation(a: list[float], b: list[float]) -> float:
    n = min(len(a), len(b))
    a, b = a[:n], b[:n]
    mean_a, mean_b = sum(a) / n, sum(b) / n
    cov = sum((x - mean_a) * (y - mean_b) for x, y in zip(a, b, strict=True))
    spread = math.sqrt(sum((x - mean_a) ** 2 for x in a) * sum((y - mean_b) ** 2 for y in b))
    return cov / spread


def difference(a: Image.Image, b: Image.Image) -> float:
    """Mean absolute difference per channel value, 0..255."""
    return sum(ImageStat.Stat(ImageChops.difference(a.convert("RGB"), b.convert("RGB"))).mean) / 3


def wav_of(samples: array[int], rate: int) -> bytes:
    out = io.BytesIO()
    with wave.open(out, "wb") as writer:
        writer.setnchannels(1)
        writer.setsampwidth(2)
        writer.setframerate(rate)
        writer.writeframes(samples.tobytes())
    return out.getvalue()


def tone_bursts(pattern: list[tuple[float, bool]], rate: int = 16_000) -> bytes:
    """A WAV of (seconds, loud) pieces: a 300 Hz tone when loud, silence otherwise."""
    samples = array("h")
    for seconds, loud in pattern:
        count = round(seconds * rate)
        gain = 12_000 if loud else 0
        samples.extend(round(gain * math.sin(2 * math.pi * 300 * k / rate)) for k in range(count))
    return wav_of(samples, rate)


def flat_video(seconds: float, fps: int, size: tuple[int, int] = (160, 120)) -> bytes:
    """A plain grey H.264 clip (nothing in it moves), muxed with PyAV directly."""
    out = io.BytesIO()
    with av.open(out, "w", format="mp4") as container:
        stream = container.add_stream("libx264", rate=fps, options={"preset": "ultrafast"})
        stream.width, stream.height, stream.pix_fmt = *size, "yuv420p"
        for index in range(round(seconds * fps)):
            frame = av.VideoFrame.from_image(Image.new("RGB", size, (128, 128, 128)))  # type: ignore[no-untyped-call]
            frame.pts = index
            container.mux(stream.encode(frame))
        container.mux(stream.encode(None))
    return out.getvalue()


@pytest.fixture(scope="module")
def clip() -> bytes:
    """2 s, 320x192, 24 fps, with sound: shared by the tests that only read a video."""
    return render_video(PROMPT, 320, 192, 2.0, audio=True)


# --- render_video ------------------------------------------------------------------------


def test_render_video_is_a_faststart_h264_mp4_of_the_requested_shape(clip: bytes) -> None:
    codec, pix_fmt, width, height, frames, rate = video_stream_info(clip)
    assert (codec, pix_fmt, width, height, frames, rate) == ("h264", "yuv420p", 320, 192, 48, 24)
    boxes = top_boxes(clip)
    assert boxes[0] == b"ftyp"
    assert boxes.index(b"moov") < boxes.index(b"mdat")  # faststart: playable while downloading
    assert len(frames_of(clip)) == 48
    with av.open(io.BytesIO(clip)) as container:
        (audio,) = container.streams.audio
        assert audio.codec_context.name == "aac"
    assert audio_seconds(clip) == pytest.approx(2.0, abs=0.05)
    assert max(envelope(clip)) > 500  # a real tone pattern, not silence


@pytest.mark.parametrize(
    ("seconds", "fps", "frames"), [(1.3, 10, 13), (0.5, 1, 1), (1.0, 60, 60), (0.04, 24, 1)]
)
def test_render_video_frame_count_is_seconds_times_fps(seconds: float, fps: int, frames: int) -> None:
    data = render_video("count", 64, 64, seconds, fps=fps)
    _, _, width, height, counted, rate = video_stream_info(data)
    assert (width, height, counted, rate) == (64, 64, frames, fps)
    assert len(frames_of(data)) == frames
    with av.open(io.BytesIO(data), mode="r") as container:
        assert not container.streams.audio  # no sound unless asked for


def test_render_video_is_deterministic_and_follows_prompt_and_seed() -> None:
    first = render_video("a red kite over a beach", 128, 96, 0.5)
    assert render_video("a red kite over a beach", 128, 96, 0.5) == first
    assert render_video("a blue whale in deep water", 128, 96, 0.5) != first
    assert render_video("a red kite over a beach", 128, 96, 0.5, seed=7) != first
    sound = render_video("a red kite over a beach", 128, 96, 0.5, audio=True)
    assert render_video("a red kite over a beach", 128, 96, 0.5, audio=True) == sound


def test_render_video_is_thread_safe() -> None:
    args = [("thread one", 1), ("thread two", 2), ("thread three", 3), ("thread one", 1)]
    expected = [render_video(prompt, 96, 64, 0.5, seed=seed, audio=True) for prompt, seed in args]
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda a: render_video(a[0], 96, 64, 0.5, seed=a[1], audio=True), args))
    assert results == expected


def test_render_video_moves_smoothly(clip: bytes) -> None:
    frames = frames_of(clip)
    steps = [difference(a, b) for a, b in pairwise(frames)]
    assert difference(frames[0], frames[24]) > 3  # the shapes have moved
    assert max(steps) < difference(frames[0], frames[24])  # a step at a time, no jumps
    assert all(step > 0 for step in steps)  # every frame changes (the timecode at least)


@pytest.mark.parametrize("fmt", ["png", "jpeg", "webp"])
def test_render_video_starts_from_the_start_image(fmt: str) -> None:
    image = generate_image("a cat on a sofa", (512, 384), fmt)
    data = render_video("the cat stretches", 240, 320, 2.0, fps=12, start_image=image)
    frames = frames_of(data)
    assert len(frames) == 24
    covered = ImageOps.fit(Image.open(io.BytesIO(image)).convert("RGB"), (240, 320), Image.Resampling.LANCZOS)
    assert difference(frames[0], covered) < 6  # the image itself, scaled to cover the frame
    assert difference(frames[-1], covered) > difference(frames[0], covered) + 3  # zoomed, panned, shapes


@pytest.mark.parametrize(
    ("width", "height", "seconds", "fps"),
    [
        (63, 64, 1.0, 24),  # odd
        (62, 64, 1.0, 24),  # too small
        (64, 1922, 1.0, 24),  # too large
        (64, 64, 0.0, 24),
        (64, 64, 20.5, 24),
        (64, 64, math.nan, 24),
        (64, 64, 1.0, 0),
        (64, 64, 1.0, 61),
    ],
)
def test_render_video_rejects_bad_arguments(width: int, height: int, seconds: float, fps: int) -> None:
    with pytest.raises(VideoInvalid):
        render_video("bad", width, height, seconds, fps=fps)


def test_render_video_rejects_an_undecodable_start_image() -> None:
    with pytest.raises(VideoInvalid, match="start image"):
        render_video("bad", 64, 64, 1.0, start_image=b"\x89PNG\r\n\x1a\nnot really")


def test_faststart_moves_moov_in_front_and_keeps_the_file_playable(clip: bytes) -> None:
    assert faststart(clip) == clip  # already in front: unchanged
    plain = flat_video(1.0, 10)  # as FFmpeg writes it to memory: 'moov' after the media
    assert top_boxes(plain).index(b"moov") > top_boxes(plain).index(b"mdat")
    moved = faststart(plain)
    assert len(moved) == len(plain)
    assert top_boxes(moved).index(b"moov") < top_boxes(moved).index(b"mdat")
    assert [f.tobytes() for f in frames_of(moved)] == [f.tobytes() for f in frames_of(plain)]


# --- thumbnails, spritesheets, probing ---------------------------------------------------------


def test_thumbnail_is_the_middle_frame_as_webp(clip: bytes) -> None:
    data = video_thumbnail(clip)
    image = Image.open(io.BytesIO(data))
    assert (image.format, image.size) == ("WEBP", (320, 192))
    assert difference(image, frames_of(clip)[24]) < 4
    for fmt, name in (("jpeg", "JPEG"), ("png", "PNG")):
        assert Image.open(io.BytesIO(video_thumbnail(clip, fmt))).format == name
    with pytest.raises(VideoInvalid):
        video_thumbnail(clip, "gif")


def test_spritesheet_is_a_jpeg_grid_of_evenly_spaced_frames(clip: bytes) -> None:
    sheet = Image.open(io.BytesIO(video_spritesheet(clip)))
    assert (sheet.format, sheet.size) == ("JPEG", (5 * 160, 5 * 96))  # 320x192 keeps its 5:3 aspect
    small = Image.open(io.BytesIO(video_spritesheet(clip, columns=3, rows=2, tile_width=100)))
    assert small.size == (300, 2 * 60)
    tiles = [small.crop((x * 100, y * 60, x * 100 + 100, y * 60 + 60)) for y in range(2) for x in range(3)]
    assert all(difference(a, b) > 1 for a, b in pairwise(tiles))  # time moves on
    frames = frames_of(clip)
    assert difference(tiles[0], frames[4].resize((100, 60), Image.Resampling.BOX)) < 6  # middle of 1st sixth
    for bad in ({"columns": 0}, {"rows": 21}, {"tile_width": 8}):
        with pytest.raises(VideoInvalid):
            video_spritesheet(clip, **bad)


def test_probe_video_describes_the_clip(clip: bytes) -> None:
    info = probe_video(clip)
    assert isinstance(info, VideoInfo)
    assert (info.width, info.height, info.frames, info.has_audio) == (320, 192, 48, True)
    assert info.fps == pytest.approx(24)
    assert info.seconds == pytest.approx(2.0, abs=1 / 24)
    assert info.audio_seconds == pytest.approx(2.0, abs=0.05)
    silent = probe_video(render_video("quiet", 64, 64, 0.5))
    assert (silent.has_audio, silent.audio_seconds, silent.frames) == (False, 0.0, 12)


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"definitely not a video" * 10,
        generate_image("still", (64, 64), "png"),
        b"".join(encode_stream(synthesize("only sound"), "mp3", SPEECH_RATE)),  # audio without video
    ],
)
def test_probe_thumbnail_and_spritesheet_reject_non_videos(data: bytes) -> None:
    for function in (probe_video, video_thumbnail, video_spritesheet):
        with pytest.raises(VideoInvalid):
            function(data)


# --- sound effects -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("prompt", "texture"),
    [
        ("heavy rain on a tin roof", "noise"),
        ("howling wind in the trees", "noise"),
        ("a babbling water stream", "noise"),
        ("a church bell ringing", "bell"),
        ("wind chimes on a porch", "bell"),  # the chime wins over the wind
        ("a huge explosion", "boom"),
        ("distant thunder and rain", "boom"),
        ("footsteps in a hallway", "clicks"),
        ("knocking on a wooden door", "clicks"),
        ("a spaceship powering up", "sweep"),
    ],
)
def test_sound_effect_texture_follows_keywords_and_lasts_exactly(prompt: str, texture: str) -> None:
    assert texture_of(prompt)[0] == texture
    data = render_sound_effect(prompt, 1.5, fmt="wav")
    with wave.open(io.BytesIO(data)) as reader:
        assert (reader.getnchannels(), reader.getsampwidth(), reader.getframerate()) == (1, 2, SFX_RATE)
        assert reader.getnframes() == round(1.5 * SFX_RATE)
        samples = array("h", reader.readframes(reader.getnframes()))
    assert rms(samples) > 300  # audible
    assert max(map(abs, samples)) < 32_000  # and not clipped


def zero_crossings(data: bytes) -> float:
    with wave.open(io.BytesIO(data)) as reader:
        samples = array("h", reader.readframes(reader.getnframes()))
    return sum(1 for a, b in pairwise(samples) if (a < 0) != (b < 0)) / len(samples)


def test_sound_effect_textures_sound_different() -> None:
    rumble = zero_crossings(render_sound_effect("an explosion", 2, fmt="wav"))
    hiss = zero_crossings(render_sound_effect("rain", 2, fmt="wav"))
    assert rumble < 0.05 < hiss  # a low rumble crosses zero rarely, rain's hiss all the time


@pytest.mark.parametrize("seconds", [0.5, 3.0, 10.0])
def test_sound_effect_mp3_lasts_the_requested_time(seconds: float) -> None:
    data = render_sound_effect("a bell", seconds)
    assert data[0] == 0xFF and data[1] & 0xE0 == 0xE0  # a bare MPEG audio frame sync
    with av.open(io.BytesIO(data), mode="r") as container:
        assert container.format.name == "mp3"
    assert audio_seconds(data) == pytest.approx(seconds, abs=0.1)


def test_sound_effect_is_deterministic_and_follows_prompt_and_seed() -> None:
    first = render_sound_effect("a whoosh", 1.0, fmt="wav")
    assert render_sound_effect("a whoosh", 1.0, fmt="wav") == first
    assert render_sound_effect("a zap", 1.0, fmt="wav") != first
    assert render_sound_effect("a whoosh", 1.0, fmt="wav", seed=1) != first
    assert render_sound_effect("a whoosh", 1.0) == render_sound_effect("a whoosh", 1.0)


@pytest.mark.parametrize(
    ("seconds", "fmt"), [(0, "mp3"), (-1, "mp3"), (30.5, "mp3"), (math.nan, "wav"), (1, "midi")]
)
def test_sound_effect_rejects_bad_arguments(seconds: float, fmt: str) -> None:
    with pytest.raises(VideoInvalid):
        render_sound_effect("boom", seconds, fmt=fmt)


# --- lip-sync ------------------------------------------------------------------------------


def mouth(frame: Image.Image) -> Image.Image:
    """The box around where the mouth is drawn (lower centre)."""
    width, height = frame.size
    return frame.crop((round(width * 0.3), round(height * 0.68), round(width * 0.7), round(height * 0.92)))


def test_lip_sync_follows_the_audio() -> None:
    video = flat_video(1.0, 10)  # shorter than the audio: it loops
    audio = tone_bursts([(1.0, False), (1.0, True), (1.0, False), (0.5, True)])
    out = lip_sync(video, audio)
    codec, _, width, height, frames, rate = video_stream_info(out)
    assert (codec, width, height, rate) == ("h264", 160, 120, 10)
    assert frames == 35  # 3.5 s at the video's 10 fps
    assert top_boxes(out).index(b"moov") < top_boxes(out).index(b"mdat")
    assert audio_seconds(out) == pytest.approx(3.5, abs=0.05)
    pictures = frames_of(out)
    silent, loud = mouth(pictures[5]), mouth(pictures[15])
    assert difference(silent, loud) > 10  # the mouth opens on the tone
    assert difference(silent, mouth(pictures[25])) < 2  # and closes again in the silence
    assert difference(loud, mouth(pictures[32])) < 2
    assert (
        difference(pictures[5].crop((0, 0, 160, 60)), pictures[15].crop((0, 0, 160, 60))) < 1
    )  # only the mouth
    assert correlation(envelope(out), envelope(audio)) > 0.9


@pytest.mark.parametrize("fmt", ["mp3", "wav", "opus", "flac", "aac"])
def test_lip_sync_takes_any_audio_format(fmt: str) -> None:
    text = "Every word moves the mouth, and the pauses close it again."
    audio = b"".join(encode_stream(synthesize(text), fmt, SPEECH_RATE))
    out = lip_sync(flat_video(0.5, 12), audio, fps=12)
    expected = audio_seconds(audio)
    info = probe_video(out)
    assert info.fps == 12
    assert info.seconds == pytest.approx(expected, abs=1 / 12 + 0.01)
    assert info.audio_seconds == pytest.approx(expected, abs=0.05)
    assert correlation(envelope(out), envelope(audio)) > 0.9


def test_lip_sync_cuts_a_longer_video_and_keeps_its_size() -> None:
    video = render_video("a presenter", 240, 320, 3.0, fps=24)
    out = lip_sync(video, tone_bursts([(1.0, True)]))
    info = probe_video(out)
    assert (info.width, info.height, info.frames, info.fps) == (240, 320, 24, 24)
    first_in, first_out = frames_of(video)[10], frames_of(out)[10]
    top = (0, 0, 240, 200)  # above the mouth, the picture is the input's
    assert difference(first_in.crop(top), first_out.crop(top)) < 3
    assert lip_sync(video, tone_bursts([(1.0, True)])) == out  # deterministic


def test_lip_sync_rejects_bad_inputs() -> None:
    video, audio = flat_video(0.5, 10), tone_bursts([(0.5, True)])
    with pytest.raises(VideoInvalid):
        lip_sync(b"not a video", audio)
    with pytest.raises(VideoInvalid):
        lip_sync(video, b"not audio at all" * 20)
    with pytest.raises(VideoInvalid):
        lip_sync(audio, audio)  # a WAV has no picture
    with pytest.raises(VideoInvalid):
        lip_sync(video, generate_image("no sound", (64, 64), "png"))
    with pytest.raises(VideoInvalid):
        lip_sync(video, audio, fps=0)
    with pytest.raises(VideoInvalid, match="longer than"):
        lip_sync(video, wav_of(array("h", bytes(2 * 8_000 * 61)), 8_000))
