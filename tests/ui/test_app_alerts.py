"""Health alerts in the app, through its named endpoints: a run started from the Train tab with a constant reward
shows the no-learning-signal badge while it trains (`/run_alerts`, polled by the page's timer), and the Runs tab's
detail shows it for the run (`/run_alerts_of`). The worker is a real training child process on the bundled demo."""

from __future__ import annotations

import pytest

from helpers.app import Form, connect, only_run, run_state, served_app, wait_for
from rloo_studio import runs
from rloo_studio.runs import alerts
from rloo_studio.ui import text

pytestmark = pytest.mark.slow

CONSTANT_CODE = '''
def same_for_all(completions, **kwargs):
    return [1.0 for _ in completions]
'''


def test_no_signal_badge_shows_while_the_run_trains_and_in_runs(runs_dir):
    steps = 12  # room to see the badge before the end: it is raised at step NO_SIGNAL_STEPS
    with served_app(runs_dir) as url:
        client = connect(url)
        form = Form(client).fast_demo(steps=steps)
        form["Checkpoint every N steps"] = steps
        table = form[text.BUILTIN_TABLE]
        table["data"] = [[False] + row[1:] for row in table["data"]]  # no builtin: the constant reward alone
        form[text.BUILTIN_TABLE] = table
        form[text.CODE] = CONSTANT_CODE
        form[text.USER_TABLE] = {"headers": ["use", "function", "weight"], "data": [[True, "same_for_all", 1.0]]}
        problems, *_ = form.call("/start_training")
        assert problems == ""
        run_dir = only_run(runs_dir)

        def badge_while_training():
            shown = client.predict(api_name="/run_alerts")
            return shown if 'data-alert="no_signal"' in shown and run_state(run_dir) == "running" else None

        badge = wait_for(badge_while_training, timeout_s=600, what="the no-signal badge while the run trains")
        assert "No learning signal" in badge and "since step 1" in badge and "What to do:" in badge
        assert runs.read_status(run_dir).get("step", 0) < steps
        wait_for(lambda: run_state(run_dir) in ("finished", "stopped", "failed"), timeout_s=600, what="the run to end")
        assert run_state(run_dir) == "finished"
        client.predict(api_name="/list_runs")  # the Runs tab's list, as the page loads it
        in_runs = client.predict(run_dir.name, api_name="/run_alerts_of")
        assert 'data-alert="no_signal"' in in_runs
        [record] = [r for r in runs.read_jsonl(run_dir / runs.ALERTS_FILE) if r["kind"] == alerts.NO_SIGNAL]
        assert record["began_step"] == 1
