"""The pinned examples' checks asked by edits (the table's change, through its `/pinned_edited` endpoint, as the page sends
it for every edited cell): quick edits give one check, of the last edit, and a check overtaken by an edit while it
runs never answers as the current one; the next edit's check does. Scored for real, in the app's scoring child."""

from __future__ import annotations

import threading

import pytest

from helpers.app import Form, connect, served_app
from rloo_studio.ui import rewards_tab, text

# The reward takes its time (as a judge's calls do), so that an edit can come while its check runs.
REWARD = ("import time\n\ndef brief(completions, **kwargs):\n    time.sleep(3)\n"
          "    return [float(len(c[0]['content'])) for c in completions]\n")
# Edits "quick" for any machine: the check waits this long for the edits to pause (the page's own pause is 1 s).
QUIET_S = 5.0


def pins(completion: str) -> dict:
    return {"headers": rewards_tab.PINNED_HEADERS, "data": [["What is 2 + 2?", completion, "4", 0.0, 100.0]]}


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(rewards_tab, "PINNED_QUIET_S", QUIET_S)
        with served_app(tmp_path_factory.mktemp("pinned-app") / "runs") as url:
            yield url
    from rloo_studio.workers import scorer as scoring_children

    scoring_children.WRITTEN.end()


@pytest.fixture
def asked(monkeypatch):
    """How many checks the page asked for (each edit's event, in the order they reached the app)."""
    from rloo_studio.ui.freshness import LatestOnly

    real, count = LatestOnly.ask, []

    def counted(self, session):
        count.append(session)
        return real(self, session)

    monkeypatch.setattr(LatestOnly, "ask", counted)
    return count


def wait_until(predicate, what: str) -> None:
    import time

    for _ in range(600):
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError(f"never: {what}")


@pytest.fixture
def scoring(monkeypatch):
    """The checks that scored (each a scoring child's run), and an event set as each starts."""
    from rloo_studio.workers import scorer as scoring_children

    real, calls, started = scoring_children.score, [], threading.Event()

    def counted(request, *args, **kwargs):
        calls.append(request)
        started.set()
        return real(request, *args, **kwargs)

    monkeypatch.setattr(scoring_children, "score", counted)
    return calls, started


def edited_form(client) -> Form:
    form = Form(client)
    form[text.CODE] = REWARD
    form[text.USER_TABLE] = {"headers": rewards_tab.USER_HEADERS, "data": [[True, "brief", 1.0]]}
    return form


def shown(job):
    """What the page would show for an edit's check: its report, or None when the check answered nothing."""
    out = job.result()  # (report, stamp); one update that changes nothing when both were skipped
    report = out[0] if isinstance(out, (list, tuple)) else out
    return report if isinstance(report, str) else None


def scored(request) -> list[str]:
    return [c for g in request.groups for c in g["completions"]]


def test_quick_edits_give_one_check_and_an_overtaken_check_never_answers_as_current(served, scoring, asked):
    calls, started = scoring
    client = connect(served)
    form = edited_form(client)
    quick = []
    for answer in ("4", "four", "5"):  # one after the other, as a person's edits reach the app
        quick.append(client.submit(pins(f"<think>2+2</think>{answer}"), *form.values, api_name="/pinned_edited"))
        wait_until(lambda: len(asked) == len(quick), "the edit reached the app")
    assert started.wait(180), "no check started"
    assert [scored(r) for r in calls] == [["<think>2+2</think>5"]]  # the last edit's, alone
    # An edit while that check runs: the check's cells are no longer the table's, and its result is not shown.
    later = client.submit(pins("<think>2+2</think>4, of course"), *form.values, api_name="/pinned_edited")
    assert [shown(job) for job in quick] == [None, None, None]
    report = shown(later)
    assert report and "`<think>2+2</think>4, of course` → total" in report and "</think>5`" not in report, report
    assert [scored(r) for r in calls] == [["<think>2+2</think>5"], ["<think>2+2</think>4, of course"]]
