"""Repetition loops: a reply that says one sentence or phrase over and over instead of answering.

A small model tuned with a reward it can satisfy by length or by a keyword often settles into a loop
("The answer is 4. The answer is 4. The answer is 4. …"); a reward that scores the first sentence
cannot see it, and a score alone does not show it. `find_loop` is the one rule the Evaluate tab and the
Chat tab use to mark such replies. Pure text, no tokenizer, no model.

The rule, on the reply lower-cased with its whitespace collapsed:

1. Sentences: the reply split after `.`, `!`, `?` and at line breaks. A sentence that occurs at least
   MIN_REPEATS times, whose copies make up at least MIN_SHARE of the reply's characters, is a loop.
2. Phrases: the reply's words. A run of 1 to MAX_PHRASE_WORDS words that occurs at least MIN_REPEATS
   times (copies not overlapping), whose copies make up at least MIN_SHARE of the reply's words, is a
   loop; the shortest such phrase at the largest share is reported (this finds loops
   without punctuation, "4 4 4 4 4" or "and then and then and then").
3. Runs: a unit of MIN_RUN_UNIT to SHOWN_CHARS characters written back to back at least MIN_REPEATS times, the
   run at least MIN_RUN_CHARS long and MIN_SHARE of the reply's characters (finds what has no spaces to split
   at: "<think></think><think></think>…"; "hahaha" and "1000000" are too short to count).

Any is enough; a sentence found by 1 is reported before a phrase found by 2, and that before a run found by 3. A reply that repeats
a sentence twice, or repeats a short phrase inside mostly other text, is not a loop.
"""

from __future__ import annotations

import re
from collections import Counter

MIN_REPEATS = 3
MIN_SHARE = 0.5  # the repeated unit covers at least half of the reply
MAX_PHRASE_WORDS = 16
SHOWN_CHARS = 60  # how much of the repeated unit a mark quotes
MIN_RUN_UNIT = 2
MIN_RUN_CHARS = 24  # a back-to-back run shorter than this is a word ("hahaha", "1000000", "Mississippi"), not a loop

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")


def _normal(text: str) -> str:
    return " ".join(text.lower().split())


def _sentence_loop(text: str) -> dict | None:
    sentences = [s for s in (_normal(part) for part in _SENTENCE_END.split(text)) if s]
    total = sum(len(s) for s in sentences)
    if not total:
        return None
    counts = Counter(sentences)
    best = None
    for sentence, times in counts.items():
        share = times * len(sentence) / total
        if times >= MIN_REPEATS and share >= MIN_SHARE and (best is None or share > best["share"]):
            best = {"unit": sentence, "times": times, "share": share}
    return best


def _copies(words: list[str], gram: tuple[str, ...]) -> int:
    """How many times `gram` occurs in `words` without overlapping itself ("4 4" in "4 4 4 4": twice)."""
    n, i, times = len(gram), 0, 0
    while i <= len(words) - n:
        if tuple(words[i:i + n]) == gram:
            times, i = times + 1, i + n
        else:
            i += 1
    return times


def _phrase_loop(text: str) -> dict | None:
    words = _normal(text).split()
    if len(words) < MIN_REPEATS:
        return None
    best = None
    for n in range(1, min(MAX_PHRASE_WORDS, len(words) // MIN_REPEATS) + 1):
        gram = Counter(tuple(words[i:i + n]) for i in range(len(words) - n + 1)).most_common(1)[0][0]
        times = _copies(words, gram)
        share = times * n / len(words)
        # The shortest phrase at the largest share: "4" for "4 4 4 4", not "4 4".
        if times >= MIN_REPEATS and share >= MIN_SHARE and (best is None or share > best["share"]):
            best = {"unit": " ".join(gram), "times": times, "share": share}
    return best


_RUN = re.compile(r"(.{%d,%d}?)\1{%d,}" % (MIN_RUN_UNIT, SHOWN_CHARS, MIN_REPEATS - 1), re.DOTALL)


def _run_loop(text: str) -> dict | None:
    normal = _normal(text)
    best = None
    for match in _RUN.finditer(normal):
        unit, run = match.group(1), match.group(0)
        share = len(run) / len(normal)
        if len(run) >= MIN_RUN_CHARS and share >= MIN_SHARE and (best is None or share > best["share"]):
            best = {"unit": unit, "times": len(run) // len(unit), "share": share}
    return best


def find_loop(text: str | None) -> dict | None:
    """The loop in `text` by the module's rule: {unit (the repeated sentence or phrase, normalised), times, share (of
    the reply it covers)}; None when there is none."""
    if not text or not text.strip():
        return None
    return _sentence_loop(text) or _phrase_loop(text) or _run_loop(text)


def loop_note(loop: dict | None, of: str = "reply") -> str:
    """`repeats “the answer is 4.” 6 times (90 % of the reply)`; "" without a loop. `of`: what the share is of."""
    if not loop:
        return ""
    unit = loop["unit"] if len(loop["unit"]) <= SHOWN_CHARS else loop["unit"][:SHOWN_CHARS - 1] + "…"
    return f"repeats “{unit}” {loop['times']} times ({100 * loop['share']:.0f} % of the {of})"
