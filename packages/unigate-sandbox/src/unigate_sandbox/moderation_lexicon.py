"""The sandbox moderation classifier's lexicon: phrases per category with a weight (0-1, how
strongly one occurrence means the category). Weights of 0.5 or more flag a category alone.
Deliberately small and free of slurs: it only has to make the sandbox's answers behave like a
classifier's (plain text scores low, "I want to kill them" flags violence and threats)."""

from __future__ import annotations

LEXICON: dict[str, tuple[tuple[str, float], ...]] = {
    "harassment": (
        ("idiot", 0.55),
        ("moron", 0.55),
        ("loser", 0.45),
        ("stupid", 0.3),
        ("pathetic", 0.35),
        ("worthless", 0.45),
        ("shut up", 0.35),
        ("nobody likes you", 0.6),
        ("i hate you", 0.6),
    ),
    "harassment/threatening": (
        ("kill you", 0.85),
        ("kill them", 0.75),
        ("hurt you", 0.7),
        ("watch your back", 0.7),
        ("you will regret", 0.55),
        ("i know where you live", 0.85),
        ("i'll find you", 0.7),
    ),
    "hate": (
        ("subhuman", 0.8),
        ("vermin", 0.5),
        ("inferior race", 0.85),
        ("go back to your country", 0.7),
        ("those people are animals", 0.75),
    ),
    "hate/threatening": (
        ("exterminate them", 0.8),
        ("wipe them out", 0.7),
        ("ethnic cleansing", 0.85),
    ),
    "illicit": (
        ("shoplift", 0.7),
        ("launder money", 0.75),
        ("money laundering", 0.6),
        ("counterfeit", 0.55),
        ("pick a lock", 0.45),
        ("hack into", 0.6),
        ("steal a car", 0.7),
        ("buy drugs", 0.6),
    ),
    "illicit/violent": (
        ("build a bomb", 0.9),
        ("make a bomb", 0.9),
        ("make explosives", 0.85),
        ("pipe bomb", 0.85),
        ("untraceable gun", 0.8),
        ("poison someone", 0.85),
    ),
    "self-harm": (
        ("self-harm", 0.6),
        ("self harm", 0.6),
        ("hurt myself", 0.7),
        ("cut myself", 0.75),
        ("suicide", 0.55),
        ("suicidal", 0.65),
    ),
    "self-harm/intent": (
        ("kill myself", 0.9),
        ("end my life", 0.9),
        ("i want to die", 0.85),
        ("going to hurt myself", 0.85),
    ),
    "self-harm/instructions": (
        ("how to kill myself", 0.9),
        ("ways to self-harm", 0.85),
        ("how to overdose", 0.85),
        ("painless way to die", 0.9),
    ),
    "sexual": (
        ("sex", 0.5),
        ("sexual", 0.5),
        ("nude", 0.55),
        ("naked", 0.45),
        ("porn", 0.8),
        ("erotic", 0.6),
        ("explicit", 0.3),
    ),
    "sexual/minors": (),  # scored from sexual content naming a minor (MINORS)
    "violence": (
        ("kill", 0.6),
        ("murder", 0.7),
        ("stab", 0.65),
        ("shoot", 0.55),
        ("attack", 0.35),
        ("beat up", 0.6),
        ("punch", 0.4),
        ("strangle", 0.7),
    ),
    "violence/graphic": (
        ("gore", 0.6),
        ("dismember", 0.85),
        ("mutilated", 0.8),
        ("blood everywhere", 0.7),
        ("entrails", 0.75),
        ("severed head", 0.85),
    ),
}
# Words naming a minor: with sexual content, they make it `sexual/minors`.
MINORS = ("child", "children", "kid", "kids", "minor", "minors", "underage", "teen", "teenager")
# A sub-category's score lifts its parent's.
PARENT = {
    "harassment/threatening": "harassment",
    "hate/threatening": "hate",
    "illicit/violent": "illicit",
    "self-harm/intent": "self-harm",
    "self-harm/instructions": "self-harm",
    "sexual/minors": "sexual",
    "violence/graphic": "violence",
}
