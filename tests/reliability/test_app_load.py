"""The app under load: two sessions watching one run, rapid repeated Start and Stop clicks."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from helpers.app import Form, connect, only_run, run_state, served_app, wait_for

from rloo_studio import runs

pytestmark = pytest.mark.slow


def test_rapid_starts_make_one_run_and_rapid_stops_stop_it_once(runs_dir):
    with served_app(runs_dir) as url:
        forms = [Form(connect(url)).fast_demo(steps=30) for _ in range(3)]
        with ThreadPoolExecutor(3) as pool:  # three Start clicks at once, from three sessions
            answers = list(pool.map(lambda f: f.call("/start_training")[0], forms))
        run_dir = only_run(runs_dir)  # exactly one run was created
        assert answers.count("") == 1 and sum("is still training" in a for a in answers) == 2, answers

        watchers = [connect(url) for _ in range(2)]  # two more sessions watch the same run
        for w in watchers:
            Form(w)
        wait_for(lambda: runs.read_status(run_dir).get("step", 0) >= 1, what="the first step")
        statuses = [w.predict(api_name="/run_status")[0] for w in watchers]
        assert all(f"`{run_dir.name}`" in s for s in statuses)

        client = forms[answers.index("")].client  # the session whose Start won watches the run
        replies = [client.predict(api_name="/stop_training") for _ in range(4)]  # Stop, clicked four times
        assert all("stopping" in r or "not training" in r for r in replies), replies
        wait_for(lambda: run_state(run_dir) == "stopped", what="the stop")
        assert runs.last_checkpoint(run_dir)[0] == runs.read_status(run_dir)["step"]
        assert "not training (stopped)" in client.predict(api_name="/stop_training")
