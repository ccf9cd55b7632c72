"""The whole bad-input corpus: every family's endpoints with the generic attacks for their
body type, their field cases, and lookups by ids no task can have."""

from __future__ import annotations

from dataclasses import replace

from tests.support.corpus_model import Case, FieldCase, Target, field_cases, form_attacks, json_attacks
from tests.support.corpus_responses import create_target, odd_id_cases, query_cases, reload_cases
from tests.support.corpus_targets import (
    admin_targets,
    anthropic_targets,
    gemini_targets,
    media_targets,
    text_targets,
)
from tests.support.corpus_tasks import (
    music_targets,
    picwish_json_cases,
    picwish_targets,
    upload_json_cases,
    video_targets,
    vidu_targets,
)

# Ids no task, key or clip can have: NUL, a lone surrogate's UTF-8 bytes, invalid UTF-8.
ODD_IDS = {
    "nul": "%00",
    "surrogate_bytes": "%ED%A0%80",
    "invalid_utf8": "%FF%FE",
    "crlf": "a%0D%0Ab",
    "superscript_two": "%C2%B2",  # a digit to str.isdigit(), not to int()
}
LOOKUPS: list[tuple[str, str, str]] = [  # family, error style, path with {id}
    ("music", "music", "/suno/fetch/{id}"),
    ("video", "openai", "/v1/videos/{id}"),
    ("video", "openai", "/v1/videos/{id}/content"),
    ("video", "openai", "/v1/video/generations/{id}"),
    ("kling", "kling", "/kling/v1/videos/text2video/{id}"),
    ("vidu", "vidu", "/ent/v2/tasks/{id}/creations"),
    ("veo", "gemini", "/v1beta/models/veo-3.0-generate-001/operations/{id}"),
    ("veo", "gemini", "/v1beta/files/{id}:download"),
    ("picwish", "picwish", "/api/tasks/visual/segmentation/{id}"),
    ("admin", "openai", "/admin/keys/{id}"),
    ("admin", "openai", "/admin/tasks/{id}"),
    ("video", "openai", "/v1/videos?after={id}"),
    ("media", "plain", "/media/tasks/{id}/0/video"),
    ("media", "plain", "/media/tasks/00000000-0000-0000-0000-000000000000/{id}/video"),
    ("veo", "gemini", "/v1beta/files/00000000000000000000000000000000v{id}:download"),
]


def _targets() -> list[tuple[Target, list[FieldCase]]]:
    return [
        *text_targets(),
        *anthropic_targets(),
        *gemini_targets(),
        *media_targets(),
        *music_targets(),
        *video_targets(),
        *vidu_targets(),
        *picwish_targets(),
        *admin_targets(),
        create_target(),
    ]


# PicWish's urlencoded form: text that is not UTF-8 is refused, never replaced by U+FFFD (an
# image URL changed that way would be fetched).
URLENCODED = {
    "urlencoded_bad_percent_escape": b"image_url=https%3A%2F%2Fe.com%2F%FF.png&type=person",
    "urlencoded_raw_latin1": b"image_url=https%3A%2F%2Fe.com%2Fa.png&type=caf\xe9",
    "urlencoded_nul": b"image_url=https%3A%2F%2Fe.com%2Fa.png&type=%00",
}


def _urlencoded_cases(target: Target) -> list[Case]:
    ctype = "application/x-www-form-urlencoded"
    return [Case(name, target, lambda b=body: b, ctype) for name, body in URLENCODED.items()]


def _lookup_cases() -> list[Case]:
    out = []
    for family, style, path in LOOKUPS:
        label = path.replace("{id}", "ID").strip("/").replace("/", "_")
        target = Target(family, style, path, {}, method="GET", label=label)
        # An unknown cursor is an empty page (200); an undecodable one a 400.
        expect = frozenset({200, 400}) if "?" in path else None
        for name, raw in ODD_IDS.items():
            where = path.replace("{id}", raw)
            out.append(Case(f"id_{name}", target, lambda: b"", None, path=where, expect=expect))
    return out


def all_cases() -> list[Case]:
    cases: list[Case] = []
    for target, specific in _targets():
        cases += form_attacks(target) if target.form else json_attacks(target)
        cases += field_cases(target, specific)
        if target.form and target.json_too and target.family == "picwish":
            as_json = replace(
                target,
                body={"image_url": "https://example.com/a.png", **target.body},
                files={},
                form=False,
                required="image_url",
            )
            cases += field_cases(as_json, picwish_json_cases())
            cases += _urlencoded_cases(as_json)
        if target.path == "/suno/upload/audio":
            as_json = replace(
                target, body={"url": "https://example.com/a.wav"}, files={}, form=False, required="url"
            )
            cases += field_cases(as_json, upload_json_cases())
    cases += _lookup_cases() + odd_id_cases() + query_cases() + reload_cases()
    ids = [c.id for c in cases]
    duplicates = {i for i in ids if ids.count(i) > 1}
    assert not duplicates, duplicates
    return cases
