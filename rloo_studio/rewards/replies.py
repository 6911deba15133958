"""What an evaluation's replies show beyond their scores: replies stuck in a repetition loop, and a tuned model that
gives one reply to many prompts. A verdict compares scores and cannot see either; the Evaluate tab and `rloo-studio
eval` say both beside it, from these functions (pure: an eval report in, counts and sentences out).

Every sample of every held-out prompt counts (`report["per_prompt"][i]["sides"][side]["samples"]`; a report of one
greedy reply per prompt keeps it as the side's `completion`).
"""

from __future__ import annotations

from collections import Counter

from .builtin import split_thinking
from .repetition import find_loop

ONE_REPLY_SHARE = 0.25  # a reply given this often across different prompts is one answer, not answers
ONE_REPLY_LEAST = 3  # ... and at least this often: 2 of 6 is two prompts with one answer


def side_replies(report: dict, side: str) -> list[str]:
    """Every reply of one side of the evaluation, every sample counted."""
    texts = []
    for record in report.get("per_prompt") or []:
        shown = (record.get("sides") or {}).get(side) or {}
        texts += [s.get("completion") for s in shown.get("samples", [])] or [shown.get("completion")]
    return [t for t in texts if isinstance(t, str)]


def loops(report: dict, side: str) -> tuple[int, int]:
    """(replies stuck in a repetition loop, replies) on one side of the evaluation."""
    texts = side_replies(report, side)
    return sum(find_loop(t) is not None for t in texts), len(texts)


def loop_prompts(report: dict) -> list[int]:
    """The numbers (from 1) of the held-out prompts where base or tuned loops."""
    name, numbers = report.get("checkpoint"), []
    for i, record in enumerate(report.get("per_prompt") or []):
        sides = record.get("sides") or {}
        texts = [s.get("completion") for side in ("base", name) for s in ((sides.get(side) or {}).get("samples") or
                                                                         [sides.get(side) or {}])]
        if any(isinstance(t, str) and find_loop(t) is not None for t in texts):
            numbers.append(i + 1)
    return numbers


def loops_sentence(report: dict, where_else: str) -> str | None:
    """'Replies stuck in a repetition loop (…): base 0 of 7, tuned (final) 7 of 7 (held-out prompts 1, 2 of 7; …)';
    None when neither side loops. `where_else`: where the person reads the replies (the tab's Examples, eval.json)."""
    name = report.get("checkpoint")
    counted = {side: loops(report, side) for side in ("base", name)}
    if not any(count for count, _ in counted.values()):
        return None
    numbers = [str(n) for n in loop_prompts(report)]
    shown = ", ".join(numbers[:12]) + (f" and {len(numbers) - 12} more" if len(numbers) > 12 else "")
    where = (f"held-out prompt{'s' if len(numbers) != 1 else ''} {shown} of {len(report.get('per_prompt') or [])}; "
             f"{where_else}")
    return ("Replies stuck in a repetition loop (one sentence or phrase at least 3 times over most of the reply): "
            + ", ".join(f"{'base' if side == 'base' else f'tuned ({side})'} {count} of {total}"
                        for side, (count, total) in counted.items()) + f" ({where}).")


def most_common_reply(report: dict, side: str) -> tuple[str, int, int]:
    """(the reply one side gives most often, after its thinking and with case and spacing evened out; how often; of how
    many replies)."""
    texts = [" ".join(split_thinking(t)[1].lower().split()) for t in side_replies(report, side)]
    if not texts:
        return "", 0, 0
    reply, count = Counter(texts).most_common(1)[0]
    return reply, count, len(texts)


def one_reply(report: dict) -> dict | None:
    """A tuned model that gives one reply to many prompts (a quarter or more of its replies, at least 3, and at least
    twice as often as base gives its own most common one): what a reward that one short answer often satisfies
    teaches. {name, reply, count, total, base_count, base_total}; None otherwise."""
    name = report["checkpoint"]
    reply, count, total = most_common_reply(report, name)
    _, base_count, base_total = most_common_reply(report, "base")
    if count < ONE_REPLY_LEAST or count < ONE_REPLY_SHARE * total or count < 2 * base_count:
        return None
    return {"name": name, "reply": reply, "count": count, "total": total, "base_count": base_count, "base_total": base_total}


def one_reply_sentence(found: dict, where: str = "the replies") -> tuple[str, str]:
    """(headline, the rest) of `one_reply`'s finding: ('tuned (final) gives one reply to many prompts', '“1” is 8 of
    its 12 replies (base's most common reply: 1 of 12). Where the prompts' answers differ, …'). `where`: where the
    person reads the replies."""
    reply = found["reply"]
    shown = f"“{reply[:60]}{'…' if len(reply) > 60 else ''}”" if reply else "an empty reply"
    return (f"tuned ({found['name']}) gives one reply to many prompts",
            f"{shown} is {found['count']} of its {found['total']} replies (base's most common reply: "
            f"{found['base_count']} of {found['base_total']}). Where the prompts' answers differ, that is one answer "
            f"that often scores, not the task learned: read {where}, and look at what the rewards give it.")
