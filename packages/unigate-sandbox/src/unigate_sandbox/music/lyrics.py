"""Generated song lyrics for the sandbox: about the prompt's subject, rhymed, deterministic.

Lines come from fill-in templates that put one of the prompt's key words in the middle and a
rhyme word (all nouns, so every template reads) at the end; each section rhymes in couplets.
"""

from __future__ import annotations

import re

from unigate_sandbox.music.style import digest, word_set

SECTIONS = ("Verse 1", "Chorus", "Verse 2", "Chorus", "Bridge", "Outro")
_TITLE_LIMIT = 60

# Words that say nothing about the subject of a song request.
_STOPWORDS = word_set(
    """a an and are as at be but by can could do does for from had has have how i if in into is it
    its just me my no not of on or our please so than that the their them then there these they this
    to us was we were what when where which who why will with would you your about song songs music
    track tune write make create generate compose some something style genre lyrics lyric very really
    like want need one two"""
)
# Style words describe how a song sounds, not what it is about: they are used only as a last resort.
_STYLE_WORDS = word_set(
    """upbeat sad happy slow fast dark bright ballad pop rock jazz edm dance electronic ambient lofi
    acoustic guitar piano synth folk country rap hip hop metal punk indie chill epic melancholic
    catchy energetic mellow instrumental vocals vocal female male beat beats"""
)
# Groups of rhyming nouns; a couplet takes two words of one group.
_RHYMES = (
    ("night", "light", "flight", "sight", "kite", "height"),
    ("heart", "start", "art", "part", "chart", "counterpart"),
    ("sky", "eye", "goodbye", "lullaby", "butterfly", "July"),
    ("day", "way", "bay", "ray", "highway", "display"),
    ("fire", "desire", "wire", "choir", "spire", "empire"),
    ("rain", "lane", "train", "chain", "plain", "window pane"),
    ("sea", "tree", "key", "melody", "harmony", "memory"),
    ("dream", "stream", "gleam", "beam", "moonbeam", "seam"),
    ("song", "throng", "gong", "sing-along", "billabong", "ping-pong"),
    ("stars", "cars", "guitars", "bars", "scars", "jars"),
    ("time", "rhyme", "chime", "climb", "prime", "lime"),
    ("home", "foam", "dome", "chrome", "catacomb", "honeycomb"),
)
# Line templates: {Word} is a key word of the prompt, {end} the rhyme word.
_TEMPLATES = (
    "I keep chasing {word} into the {end}",
    "{Word} is calling from the {end}",
    "We were running with the {word} across the {end}",
    "Hold the {word} close beneath the {end}",
    "Every {word} is shining in the {end}",
    "Tell me {word} will find its {end}",
    "Carry the {word} all along the {end}",
    "Nothing but {word} and the open {end}",
    "Singing of {word} to the {end}",
    "Down in the {word} we light the {end}",
    "Whisper of {word} upon the {end}",
    "{Word} and me against the {end}",
)
_CHORUS_TEMPLATES = (
    "Oh, {title}, take me to the {end}",
    "{title}, we're never coming down from the {end}",
    "Say it loud, {title}, through the {end}",
    "{title}, {title}, burning like the {end}",
)
_FALLBACK_SUBJECTS = (("summer", "ocean"), ("city", "neon"), ("midnight", "river"), ("golden", "horizon"))
_WORD = re.compile(r"[^\W\d_][\w'-]*")


def keywords(prompt: str) -> list[str]:
    """The prompt's subject words (style words only if there is nothing else), lower-case, in order."""
    seen: dict[str, None] = {}
    for word in _WORD.findall(prompt):
        lowered = word.lower().strip("'-")
        if len(lowered) > 2 and lowered not in _STOPWORDS:
            seen.setdefault(lowered, None)
    subject = [word for word in seen if word not in _STYLE_WORDS]
    return subject or list(seen)


def make_title(prompt: str) -> str:
    """Title Case of the first key words of the prompt, at most 60 characters."""
    words = keywords(prompt)[:3] or list(
        _FALLBACK_SUBJECTS[digest("title", prompt) % len(_FALLBACK_SUBJECTS)]
    )
    title = ""
    for word in words:
        candidate = f"{title} {word.capitalize()}".strip()
        if len(candidate) > _TITLE_LIMIT:
            break
        title = candidate
    return title or words[0][:_TITLE_LIMIT].capitalize()


def _couplet(templates: tuple[str, ...], words: list[str], title: str, bits: int) -> list[str]:
    """Two lines ending on two different words of one rhyme group."""
    group = _RHYMES[bits % len(_RHYMES)]
    first = (bits >> 8) % len(group)
    ends = (group[first], group[(first + 1 + (bits >> 16) % (len(group) - 1)) % len(group)])
    lines = []
    first_template = (bits >> 24) % len(templates)
    for index, end in enumerate(ends):
        # The second line uses a different template from the first.
        template = templates[
            (first_template + index * (1 + (bits >> 30) % (len(templates) - 1))) % len(templates)
        ]
        word = words[(bits >> (40 + 4 * index)) % len(words)]
        line = template.format(word=word, Word=word.capitalize(), end=end, title=title)
        lines.append(line[0].upper() + line[1:])
    return lines


def _section(name: str, words: list[str], title: str, prompt: str) -> list[str]:
    templates = _CHORUS_TEMPLATES if name == "Chorus" else _TEMPLATES
    lines: list[str] = []
    for couplet in range(2):
        lines += _couplet(templates, words, title, digest("lyrics", prompt, name, couplet))
    return lines


def write_lyrics(prompt: str) -> tuple[str, str]:
    """(title, lyrics) for a song about the prompt; sections are marked like `[Chorus]`.

    The same prompt always gives the same lyrics; both choruses are the same words.
    """
    title = make_title(prompt)
    words = keywords(prompt) or [word.lower() for word in title.split()]
    blocks = [f"[{name}]\n" + "\n".join(_section(name, words, title, prompt)) for name in SECTIONS]
    return title, "\n\n".join(blocks)
