"""MP4 plumbing for the sandbox video endpoints: yuv420p planes, an in-memory H.264 writer, inputs.

Frames are handled as Y/Cb/Cr planes held in Pillow "L" images (chroma at half size, as
yuv420p stores it): copying and drawing 8-bit planes is cheap, and no colour conversion runs
per frame. Encoding is single-threaded and bit-exact, so the same frames give the same bytes;
the MP4 is written to memory and its 'moov' box then moved to the front (faststart), which
FFmpeg can only do for files on disk. Uploaded media is opened from memory with plain
demuxers only.
"""

from __future__ import annotations

import io
import struct
from collections.abc import Iterator
from fractions import Fraction
from typing import NamedTuple

import av
from PIL import Image

from unigate_sandbox.media.probe import _DEMUXERS as _AUDIO_DEMUXERS

_BT601 = ((0.299, 0.587, 0.114), (-0.168736, -0.331264, 0.5), (0.5, -0.418688, -0.081312))
# Pillow's YCbCr is full range (JPEG); H.264 video is limited range (Y 16..235, chroma 16..240).
_Y_RANGE = tuple(16 + round(v * 219 / 255) for v in range(256))
_C_RANGE = tuple(128 + round((v - 128) * 224 / 255) for v in range(256))
_MAX_INPUT_PIXELS = 4096 * 4096
# Demuxers an upload may use: the audio ones plus video containers and raw video streams.
# Playlist and reference formats (hls, concat, ...) stay refused: they would make FFmpeg
# open other files or URLs named inside the upload.
_DEMUXERS = _AUDIO_DEMUXERS + ",3gp,3g2,mj2,avi,flv,mpegts,gif,h264,hevc,m4v,ivf"
_OFFSET_BOXES = frozenset({b"moov", b"trak", b"mdia", b"minf", b"stbl"})  # boxes on the way to stco


class VideoInvalid(ValueError):
    """Bad arguments, or an upload that is not decodable video/audio (the message is for the user)."""


class Planes(NamedTuple):
    """One yuv420p picture as Pillow "L" images: Y at full size, Cb and Cr at half size."""

    y: Image.Image
    cb: Image.Image
    cr: Image.Image

    def copy(self) -> Planes:
        return Planes(self.y.copy(), self.cb.copy(), self.cr.copy())


def ycc(color: tuple[int, int, int]) -> tuple[int, int, int]:
    """An RGB colour in limited-range BT.601 Y, Cb, Cr (what the planes hold)."""
    y, cb, cr = (sum(k * c for k, c in zip(row, color, strict=True)) for row in _BT601)
    return _Y_RANGE[round(y)], _C_RANGE[round(cb + 128)], _C_RANGE[round(cr + 128)]


def to_planes(image: Image.Image) -> Planes:
    """An RGB picture (even sides) as limited-range yuv420p planes."""
    y, cb, cr = image.convert("RGB").convert("YCbCr").split()
    return Planes(y.point(_Y_RANGE), cb.reduce(2).point(_C_RANGE), cr.reduce(2).point(_C_RANGE))


def planes_of(frame: av.VideoFrame, width: int, height: int) -> Planes:
    """A frame as yuv420p planes of `width` x `height` (scaled, bilinear, and converted by swscale)."""
    frame = frame.reformat(width=width, height=height, format="yuv420p", interpolation="BILINEAR")
    images = []
    for plane in frame.planes:  # rows may be padded: read them with the plane's stride
        size = (plane.width, plane.height)
        images.append(Image.frombuffer("L", size, bytes(plane), "raw", "L", plane.line_size, 1).copy())
    return Planes(*images)


def frame_of(planes: Planes) -> av.VideoFrame:
    """A yuv420p frame holding the planes."""
    frame = av.VideoFrame(planes.y.width, planes.y.height, "yuv420p")
    for plane, image in zip(frame.planes, planes, strict=True):
        if plane.line_size != image.width:  # FFmpeg aligns rows: pad each one to the stride
            padded = Image.new("L", (plane.line_size, image.height))
            padded.paste(image)
            image = padded
        plane.update(image.tobytes())
    return frame


class Mp4Writer:
    """An MP4 built in memory: H.264 (x264, ultrafast) video and optionally an AAC track.

    Audio is given as s16 interleaved PCM and muxed alongside the frames, so the file
    interleaves the two tracks by time. Not thread-safe; one writer per call.
    """

    def __init__(
        self, width: int, height: int, fps: int | Fraction, audio_rate: int = 0, channels: int = 1
    ) -> None:
        self._buffer = io.BytesIO()
        self._output = av.open(self._buffer, mode="w", format="mp4", options={"fflags": "+bitexact"})
        # One thread: x264's output depends on its thread count, and requests run side by side anyway.
        options = {"preset": "ultrafast", "threads": "1", "flags": "+bitexact"}
        self._video = self._output.add_stream("libx264", rate=fps, options=options)
        self._video.width, self._video.height, self._video.pix_fmt = width, height, "yuv420p"
        context = self._video.codec_context
        context.gop_size = max(1, round(2 * fps))  # a keyframe every 2 s: players can seek
        context.colorspace = context.color_primaries = context.color_trc = 6  # BT.601 (SMPTE 170M)
        context.color_range = 1  # limited ("MPEG") range
        self._time_base = 1 / Fraction(fps)
        self._frames = 0
        self._channels = 1 if channels == 1 else 2
        self._layout = "mono" if channels == 1 else "stereo"
        self._audio = None
        if audio_rate:
            encoder = {"flags": "+bitexact", "aac_coder": "fast", "b": str(64_000 * channels)}
            self._audio = self._output.add_stream(
                "aac", rate=audio_rate, layout=self._layout, options=encoder
            )
        self._samples = 0

    def __enter__(self) -> Mp4Writer:
        return self

    def __exit__(self, kind: type[BaseException] | None, *rest: object) -> None:
        try:
            self._output.close()  # a no-op after finish()
        except av.FFmpegError:
            if kind is None:  # when already failing, the first error is the one to report
                raise

    def add_frame(self, planes: Planes) -> None:
        frame = frame_of(planes)
        frame.pts, frame.time_base = self._frames, self._time_base
        self._frames += 1
        self._output.mux(self._video.encode(frame))

    def add_audio(self, pcm: bytes) -> None:
        """Append s16 interleaved PCM (whole samples) to the audio track."""
        if self._audio is None or not pcm:
            return
        rate = self._audio.codec_context.sample_rate
        frame = av.AudioFrame(format="s16", layout=self._layout, samples=len(pcm) // (2 * self._channels))
        frame.planes[0].update(pcm)
        frame.sample_rate, frame.time_base, frame.pts = rate, Fraction(1, rate), self._samples
        self._samples += frame.samples
        self._output.mux(self._audio.encode(frame))

    def finish(self) -> bytes:
        """Flush the encoders and return the finished MP4, 'moov' first."""
        self._output.mux(self._video.encode(None))
        if self._audio is not None:
            self._output.mux(self._audio.encode(None))
        self._output.close()
        return faststart(self._buffer.getvalue())


def _boxes(data: bytes | bytearray, start: int, end: int) -> Iterator[tuple[bytes, int, int, int]]:
    """(type, start, payload start, end) of each ISO-BMFF box in data[start:end]."""
    position = start
    while position + 8 <= end:
        size, kind = struct.unpack_from(">I4s", data, position)
        header = 8
        if size == 1:
            (size,) = struct.unpack_from(">Q", data, position + 8)
            header = 16
        elif size == 0:  # "to the end of the file"
            size = end - position
        if size < header or position + size > end:
            raise ValueError("malformed MP4 box")
        yield bytes(kind), position, position + header, position + size
        position += size


def _shift_chunk_offsets(moov: bytearray, start: int, end: int, shift: int) -> None:
    for kind, _, body, stop in _boxes(moov, start, end):
        if kind in _OFFSET_BOXES:
            _shift_chunk_offsets(moov, body, stop, shift)
        elif kind in (b"stco", b"co64"):
            (count,) = struct.unpack_from(">I", moov, body + 4)
            fmt = ">I" if kind == b"stco" else ">Q"
            width = struct.calcsize(fmt)
            for at in range(body + 8, body + 8 + count * width, width):
                (offset,) = struct.unpack_from(fmt, moov, at)
                struct.pack_into(fmt, moov, at, offset + shift)


def faststart(mp4: bytes) -> bytes:
    """Move the 'moov' box in front of the media data, updating the chunk offsets it holds."""
    top = list(_boxes(mp4, 0, len(mp4)))
    boxes = {kind: (start, body, end) for kind, start, body, end in reversed(top)}  # first of each kind
    if b"moov" not in boxes or b"mdat" not in boxes:
        raise ValueError("not a complete MP4")
    (moov_start, moov_body, moov_end), mdat_start = boxes[b"moov"], boxes[b"mdat"][0]
    if moov_start < mdat_start:
        return mp4
    moov = bytearray(mp4[moov_start:moov_end])
    _shift_chunk_offsets(moov, moov_body - moov_start, len(moov), len(moov))
    return mp4[:mdat_start] + bytes(moov) + mp4[mdat_start:moov_start] + mp4[moov_end:]


def open_input(data: bytes, what: str = "video") -> av.container.InputContainer:
    """Open untrusted media (video or audio) from memory with plain demuxers only, or raise `VideoInvalid`."""
    try:
        return av.open(io.BytesIO(data), mode="r", options={"format_whitelist": _DEMUXERS})
    except (av.FFmpegError, OSError, ValueError, UnicodeDecodeError) as exc:
        raise VideoInvalid(f"the {what} could not be read") from exc


def video_stream(container: av.container.InputContainer) -> av.VideoStream:
    """The first video stream, refusing pictures too large to decode cheaply."""
    if not container.streams.video:
        raise VideoInvalid("the file contains no video")
    stream = container.streams.video[0]
    if stream.codec_context.width * stream.codec_context.height > _MAX_INPUT_PIXELS:
        raise VideoInvalid("the video's picture is too large")
    return stream
