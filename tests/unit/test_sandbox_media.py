"""The sandbox provider's media library: speech, audio encoding/probing, transcripts and images."""

from __future__ import annotations

import io
import math
import re
import struct
import tracemalloc
import wave
import zlib
from array import array
from pathlib import Path

import av
import pytest
from PIL import Image, ImageChops, ImageStat

from unigate_sandbox.media import (
    AUDIO_FORMATS,
    CONTENT_TYPES,
    IMAGE_CONTENT_TYPES,
    IMAGE_FORMATS,
    SPEECH_RATE,
    AudioInfo,
    AudioInvalid,
    ImageInvalid,
    aspect_size,
    edit_image,
    encode_stream,
    generate_image,
    image_info,
    parse_size,
    probe_audio,
    speech_duration,
    synthesize,
    to_srt,
    to_vtt,
    transcribe,
)

TEXT = "The quick brown fox jumps over the lazy dog. Then it rests, and the sandbox keeps talking!"
OTHER = "A completely different sentence, with other words; it should sound and read differently."
# format → (demuxer name, codec name, decoded sample rate)
EXPECTED = {
    "mp3": ("mp3", "mp3", SPEECH_RATE),
    "opus": ("ogg", "opus", 48_000),
    "aac": ("aac", "aac", SPEECH_RATE),
    "flac": ("flac", "flac", SPEECH_RATE),
    "wav": ("wav", "pcm_s16le", SPEECH_RATE),
}
ENCODED = tuple(EXPECTED)

# --- helpers ---------------------------------------------------------------------------


def encode(text: str, fmt: str, **kwargs: object) -> bytes:
    return b"".join(encode_stream(synthesize(text, **kwargs), fmt, SPEECH_RATE))  # type: ignore[arg-type]


def decode(data: bytes) -> tuple[str, str, int, int, float]:
    """(demuxer, codec, sample rate, channels, seconds of decoded audio), via PyAV."""
    with av.open(io.BytesIO(data), mode="r") as container:
        stream = container.streams.audio[0]
        samples = rate = channels = 0
        for frame in container.decode(stream):
            samples, rate, channels = samples + frame.samples, frame.sample_rate, frame.layout.nb_channels
        return container.format.name, stream.codec.canonical_name, rate, channels, samples / rate


def close_to(actual: float, expected: float) -> bool:
    """Within 5% or 60 ms, whichever is larger (encoder delay and frame padding)."""
    return abs(actual - expected) <= max(0.05 * expected, 0.06)


def samples_of(pcm: bytes) -> array[int]:
    return array("h", pcm)  # the test hosts are little-endian, like s16le


def rms(samples: array[int]) -> float:
    return math.sqrt(sum(v * v for v in samples) / max(1, len(samples)))


def png(image: Image.Image) -> bytes:
    out = io.BytesIO()
    image.save(out, "PNG")
    return out.getvalue()


def png_chunk(kind: bytes, payload: bytes) -> bytes:
    return struct.pack(">I", len(payload)) + kind + payload + struct.pack(">I", zlib.crc32(kind + payload))


def open_image(data: bytes) -> Image.Image:
    image = Image.open(io.BytesIO(data))
    image.load()
    return image


# --- speech ----------------------------------------------------------------------------


def test_speech_duration_grows_with_text_and_speed() -> None:
    assert speech_duration("") == pytest.approx(0.3)
    assert speech_duration("hi") == pytest.approx(0.3)
    assert speech_duration("x" * 4096) == pytest.approx(4096 * 0.06)  # about 4 minutes
    assert speech_duration(TEXT, speed=2.0) == pytest.approx(speech_duration(TEXT) / 2)
    with pytest.raises(ValueError):
        speech_duration(TEXT, speed=0)
    with pytest.raises(ValueError):
        synthesize(TEXT, speed=-1.0)  # raised at the call, before streaming


@pytest.mark.parametrize(("text", "speed"), [(TEXT, 1.0), (TEXT, 1.7), ("ok", 1.0), ("", 1.0)])
def test_synthesize_lasts_speech_duration_in_quarter_second_chunks(text: str, speed: float) -> None:
    chunks = list(synthesize(text, speed=speed))
    assert all(len(chunk) == 2 * SPEECH_RATE // 4 for chunk in chunks[:-1])
    total = sum(len(chunk) for chunk in chunks) / 2
    assert abs(total - speech_duration(text, speed) * SPEECH_RATE) <= 1


def test_synthesize_is_deterministic_voiced_and_voice_dependent() -> None:
    pcm = b"".join(synthesize(TEXT))
    assert pcm == b"".join(synthesize(TEXT))
    assert pcm != b"".join(synthesize(TEXT, voice="onyx"))
    assert pcm != b"".join(synthesize(OTHER[: len(TEXT)]))
    assert rms(samples_of(pcm)) > 2000
    assert len(b"".join(synthesize(TEXT, sample_rate=16_000))) == 2 * round(speech_duration(TEXT) * 16_000)


def test_words_are_tones_separated_by_silence() -> None:
    samples = samples_of(b"".join(synthesize("one. two")))
    unit = round(0.06 * SPEECH_RATE)  # samples per character
    assert rms(samples[: 3 * unit]) > 2000  # "one"
    assert not any(samples[3 * unit : 5 * unit])  # ". " is a pause
    assert rms(samples[5 * unit : 8 * unit]) > 2000  # "two"


# --- encoding --------------------------------------------------------------------------


def test_formats_and_content_types() -> None:
    assert AUDIO_FORMATS == ("mp3", "opus", "aac", "flac", "wav", "pcm")
    assert CONTENT_TYPES["mp3"] == "audio/mpeg"
    assert CONTENT_TYPES["opus"] == "audio/ogg"
    assert set(CONTENT_TYPES) == set(AUDIO_FORMATS)
    with pytest.raises(ValueError, match="unsupported audio format"):
        encode_stream([b""], "ogg", SPEECH_RATE)


@pytest.mark.parametrize("fmt", ENCODED)
def test_encoded_audio_decodes_with_the_right_codec_rate_and_duration(fmt: str) -> None:
    data = encode(TEXT, fmt)
    demuxer, codec, rate, channels, seconds = decode(data)
    assert (demuxer, codec, rate) == EXPECTED[fmt]
    assert channels == 1
    assert close_to(seconds, speech_duration(TEXT)), seconds
    assert encode(TEXT, fmt) == data  # bit-exact: same input, same bytes
    assert encode(OTHER, fmt) != data


def test_pcm_is_the_raw_samples() -> None:
    data = encode(TEXT, "pcm")
    assert data == b"".join(synthesize(TEXT))
    assert len(data) / 2 / SPEECH_RATE == pytest.approx(speech_duration(TEXT), abs=1 / SPEECH_RATE)


def test_wav_sizes_exact_when_the_length_is_known() -> None:
    total = round(speech_duration(TEXT) * SPEECH_RATE)
    data = b"".join(encode_stream(synthesize(TEXT), "wav", SPEECH_RATE, total_samples=total))
    with wave.open(io.BytesIO(data)) as reader:
        assert (reader.getnchannels(), reader.getsampwidth(), reader.getframerate()) == (1, 2, SPEECH_RATE)
        assert reader.getnframes() == total
        assert reader.readframes(total) == b"".join(synthesize(TEXT))
    # The promise in the header holds even when the PCM is shorter or longer.
    for pcm, count in ((b"\x01\x00" * 10, 25), (b"\x01\x00" * 10, 4)):
        data = b"".join(encode_stream([pcm], "wav", 8000, total_samples=count))
        assert len(data) == 44 + 2 * count
        assert struct.unpack_from("<I", data, 40)[0] == 2 * count


def test_streamed_wav_has_maximal_sizes_and_odd_chunks_are_realigned() -> None:
    pcm = b"".join(synthesize("hello"))
    pieces = [pcm[i : i + 777] for i in range(0, len(pcm), 777)]  # odd sizes split samples
    data = b"".join(encode_stream(pieces, "wav", SPEECH_RATE))
    assert data[4:8] == data[40:44] == b"\xff\xff\xff\xff"
    assert data[44:] == pcm
    assert decode(data)[4] == pytest.approx(len(pcm) / 2 / SPEECH_RATE)


@pytest.mark.parametrize("fmt", ["mp3", "opus"])
def test_long_speech_streams_in_bounded_memory(fmt: str) -> None:
    text = ("Streaming keeps memory flat, chunk after chunk. " * 80)[:3000]  # 3 minutes
    assert speech_duration(text) == pytest.approx(180.0)
    tracemalloc.start()
    try:
        count = size = 0
        for chunk in encode_stream(synthesize(text), fmt, SPEECH_RATE):
            count, size = count + 1, size + len(chunk)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert count >= 20
    assert size > 100_000
    assert peak < 20 * 1024 * 1024


# --- probing ---------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ENCODED)
def test_probe_measures_generated_audio(fmt: str, tmp_path: Path) -> None:
    data = encode(TEXT, fmt)
    path = tmp_path / f"speech.{fmt}"
    path.write_bytes(data)
    for source in (str(path), io.BytesIO(data)):
        info = probe_audio(source)
        assert close_to(info.duration, speech_duration(TEXT)), info.duration
        assert (info.codec, info.sample_rate, info.channels) == (*EXPECTED[fmt][1:], 1)
        assert len(info.loudness) == pytest.approx(info.duration / 0.5, abs=1.5)
        assert all(0 <= value <= 1 for value in info.loudness)
        assert max(info.loudness) > 0.05


def test_probe_reads_stereo_and_silence() -> None:
    out = io.BytesIO()
    with wave.open(out, "wb") as writer:
        writer.setnchannels(2)
        writer.setsampwidth(2)
        writer.setframerate(44_100)
        writer.writeframes(bytes(4 * 44_100 * 2))  # 2 s of stereo silence
    info = probe_audio(io.BytesIO(out.getvalue()))
    assert (info.channels, info.sample_rate, info.codec) == (2, 44_100, "pcm_s16le")
    assert info.duration == pytest.approx(2.0)
    assert info.loudness == [0.0] * 4
    assert transcribe(info).text == ""


@pytest.mark.parametrize(
    "data",
    [b"", b"this is not audio at all " * 200, bytes(range(256)) * 40, b"RIFF\x00\x00\x00\x00WAVEfmt "],
)
def test_probe_rejects_garbage(data: bytes, tmp_path: Path) -> None:
    path = tmp_path / "upload.mp3"
    path.write_bytes(data)
    with pytest.raises(AudioInvalid) as caught:
        probe_audio(str(path))
    assert str(tmp_path) not in str(caught.value)
    with pytest.raises(AudioInvalid):
        probe_audio(io.BytesIO(data))


def test_probe_rejects_a_file_without_audio() -> None:
    out = io.BytesIO()
    with av.open(out, mode="w", format="matroska") as container:  # one frame of video, no audio
        stream = container.add_stream("ffv1", rate=1)
        stream.width = stream.height = 16
        stream.pix_fmt = "yuv420p"
        frame = av.VideoFrame(16, 16, "yuv420p")
        for plane in frame.planes:
            plane.update(bytes(plane.buffer_size))
        frame.pts = 0
        container.mux(stream.encode(frame))
        container.mux(stream.encode(None))
    with pytest.raises(AudioInvalid, match="no audio"):
        probe_audio(io.BytesIO(out.getvalue()))
    with pytest.raises(AudioInvalid):
        probe_audio(io.BytesIO(png(Image.new("RGB", (8, 8)))))


def test_probe_refuses_formats_that_reference_other_files(tmp_path: Path) -> None:
    playlist = b"#EXTM3U\n#EXT-X-TARGETDURATION:10\n#EXTINF:10,\nhttp://127.0.0.1:9/a.mp3\n#EXT-X-ENDLIST\n"
    target = tmp_path / "speech.wav"
    target.write_bytes(encode("hello", "wav"))
    concat = f"ffconcat version 1.0\nfile '{target}'\n".encode()
    for data in (playlist, concat):
        with pytest.raises(AudioInvalid):
            probe_audio(io.BytesIO(data))
    with pytest.raises(AudioInvalid):
        probe_audio("http://127.0.0.1:9/speech.wav")  # a path, never a URL


# --- transcripts -----------------------------------------------------------------------


def test_transcript_timing_fits_the_audio() -> None:
    info = probe_audio(io.BytesIO(encode(TEXT + " " + OTHER, "flac")))
    result = transcribe(info)
    assert result.language == "en"
    assert result.duration == info.duration
    assert result.words and result.segments
    assert result.text == " ".join(segment.text for segment in result.segments)
    assert len(result.words) == pytest.approx(2.5 * info.duration, rel=0.2)
    previous = 0.0
    for word in result.words:
        assert 0 <= previous <= word.start <= word.end <= info.duration
        previous = word.end
    for index, segment in enumerate(result.segments):
        assert segment.id == index
        assert segment.end - segment.start <= 5.0 + 1e-9
        inside = [w for w in result.words if segment.start <= w.start and w.end <= segment.end]
        assert [w.word.lower() for w in inside] == segment.text.rstrip(".").lower().split()
    assert sum(len(s.text.split()) for s in result.segments) == len(result.words)


def test_transcript_follows_pauses_and_is_deterministic() -> None:
    info = AudioInfo(
        duration=5.0, sample_rate=16_000, channels=1, codec="opus", loudness=[0.2] * 4 + [0.0] * 2 + [0.3] * 4
    )
    result = transcribe(info)
    assert [(s.start, s.end) for s in result.segments] == [(0.0, 2.0), (3.0, 5.0)]
    assert not any(1.999 < w.start < 3.0 for w in result.words)
    assert transcribe(info) == result
    changed = AudioInfo(5.0, 16_000, 1, "opus", [0.2] * 4 + [0.0] * 2 + [0.25] * 4)
    assert transcribe(changed).text != result.text


def test_transcript_differs_between_recordings_and_honours_options() -> None:
    first = transcribe(probe_audio(io.BytesIO(encode(TEXT, "wav"))))
    second = transcribe(probe_audio(io.BytesIO(encode(OTHER, "wav"))))
    assert first.text != second.text
    info = probe_audio(io.BytesIO(encode(TEXT, "mp3")))
    assert transcribe(info, prompt="Zebra-crossing notes").words[0].word == "Zebra"
    assert transcribe(info, prompt="Zebra").text.startswith("Zebra ")
    assert transcribe(info, language="fr").language == "fr"
    assert transcribe(info, language="French").language == "fr"
    assert transcribe(info, language="fr", translate=True).language == "en"


def test_subtitles_are_well_formed() -> None:
    result = transcribe(probe_audio(io.BytesIO(encode(TEXT + " " + OTHER, "wav"))))
    srt = to_srt(result)
    cues = srt.strip().split("\n\n")
    assert len(cues) == len(result.segments) >= 2
    for number, (cue, segment) in enumerate(zip(cues, result.segments, strict=True), start=1):
        index, timing, text = cue.split("\n")
        assert index == str(number)
        assert re.fullmatch(r"\d\d:\d\d:\d\d,\d{3} --> \d\d:\d\d:\d\d,\d{3}", timing)
        assert text == segment.text
    assert srt.endswith("\n\n")
    assert cues[0].split("\n")[1].startswith("00:00:00,000 --> 00:00:0")
    vtt = to_vtt(result)
    assert vtt.startswith("WEBVTT\n\n")
    timings = re.findall(r"^(\S+) --> (\S+)$", vtt, flags=re.MULTILINE)
    assert len(timings) == len(result.segments)
    assert all(re.fullmatch(r"\d\d:\d\d:\d\d\.\d{3}", stamp) for pair in timings for stamp in pair)


# --- images ----------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", IMAGE_FORMATS)
def test_generated_images_decode_at_the_requested_size(fmt: str) -> None:
    data = generate_image("a lighthouse on a cliff at sunset", (320, 192), fmt)
    image = open_image(data)
    assert image.format.lower() == fmt  # type: ignore[union-attr]
    assert (image.size, image.mode) == ((320, 192), "RGB")
    assert image_info(data) == (fmt, 320, 192)
    assert IMAGE_CONTENT_TYPES[fmt] == f"image/{fmt}"
    assert generate_image("a lighthouse on a cliff at sunset", (320, 192), fmt) == data


def test_generated_images_depend_on_prompt_seed_and_options() -> None:
    base = open_image(generate_image("a red bicycle", (256, 256)))
    for other in (
        generate_image("a blue submarine", (256, 256)),
        generate_image("a red bicycle", (256, 256), seed=7),
        generate_image("a red bicycle", (256, 256), style="natural"),
    ):
        assert ImageStat.Stat(ImageChops.difference(base, open_image(other))).mean != [0.0, 0.0, 0.0]


@pytest.mark.parametrize("fmt", ["png", "webp"])
def test_transparent_background(fmt: str) -> None:
    image = open_image(generate_image("a floating balloon", (256, 320), fmt, background="transparent"))
    assert (image.size, image.mode) == ((256, 320), "RGBA")
    assert image.getchannel("A").getextrema() == (0, 255)  # transparent background, opaque shapes
    with pytest.raises(ValueError, match="transparent"):
        generate_image("a floating balloon", (256, 256), "jpeg", background="transparent")


def test_edit_transforms_the_image_and_respects_the_mask() -> None:
    source = generate_image("a quiet harbour", (256, 256))
    edited = open_image(edit_image([source], "paint it gold", None, None))
    assert edited.size == (256, 256)
    difference = ImageStat.Stat(ImageChops.difference(open_image(source), edited.convert("RGB"))).mean
    assert sum(difference) / 3 > 20
    assert open_image(edit_image([source], "paint it gold", None, (128, 96), "jpeg")).size == (128, 96)
    assert edit_image([source], "paint it gold", None, None) == edit_image(
        [source], "paint it gold", None, None
    )

    mask = Image.new("RGBA", (128, 128), (0, 0, 0, 255))  # resized to the image
    mask.paste((0, 0, 0, 0), (0, 0, 64, 128))  # left half transparent: the area to edit
    thumb = generate_image("a seagull", (200, 120), "jpeg")
    result = open_image(edit_image([source, thumb], "paint it gold", png(mask), None)).convert("RGB")
    original = open_image(source).convert("RGB")
    kept = ImageChops.difference(original.crop((128, 0, 256, 256)), result.crop((128, 0, 256, 256)))
    assert kept.getbbox() is None  # opaque mask: untouched
    changed = ImageStat.Stat(
        ImageChops.difference(original.crop((0, 0, 128, 256)), result.crop((0, 0, 128, 256)))
    )
    assert sum(changed.mean) / 3 > 20


def test_edit_rejects_bad_uploads() -> None:
    source = generate_image("a quiet harbour", (128, 128))
    with pytest.raises(ImageInvalid):
        edit_image([b"definitely not an image"], "x", None, None)
    with pytest.raises(ImageInvalid, match="alpha"):
        edit_image([source], "x", png(Image.new("RGB", (128, 128))), None)
    with pytest.raises(ImageInvalid):
        edit_image([source], "x", b"\x89PNG broken", None)
    # A header promising 7500x7500 pixels (56 MP) is refused before anything is decoded.
    ihdr = struct.pack(">IIBBBBB", 7500, 7500, 8, 2, 0, 0, 0)
    bomb = b"\x89PNG\r\n\x1a\n" + png_chunk(b"IHDR", ihdr) + png_chunk(b"IDAT", b"") + png_chunk(b"IEND", b"")
    assert image_info(bomb) == ("png", 7500, 7500)  # the header alone is fine
    with pytest.raises(ImageInvalid, match="too large"):
        edit_image([bomb], "x", None, None)
    with pytest.raises(ImageInvalid, match="too large"):
        edit_image([source], "x", bomb, None)
    with pytest.raises(ImageInvalid):
        image_info(b"GIF89a-but-not-really")


def test_parse_size() -> None:
    assert parse_size("1024x1536") == (1024, 1536)
    assert parse_size(None) == (1024, 1024)
    assert parse_size("auto", default=(512, 512)) == (512, 512)
    for bad in ("1024", "abcxdef", "1024x", "32x1024", "1024x5000", "-5x100"):
        with pytest.raises(ValueError, match="size"):
            parse_size(bad)


def test_aspect_size() -> None:
    assert aspect_size(None) == (1024, 1024)
    assert aspect_size("16:9") == (1344, 768)
    for ratio in ("16:9", "1:1", "21:9", "2:3", "3:2", "4:5", "5:4", "9:16", "9:21"):
        width, height = aspect_size(ratio)
        assert width % 64 == 0 and height % 64 == 0
        assert width * height == pytest.approx(1024 * 1024, rel=0.1)
        w, h = (int(part) for part in ratio.split(":"))
        assert width / height == pytest.approx(w / h, rel=0.1)
    assert aspect_size("1:1", base=512) == (512, 512)
    for bad in ("7:3", "16x9", ""):
        with pytest.raises(ValueError, match="aspect_ratio"):
            aspect_size(bad)
