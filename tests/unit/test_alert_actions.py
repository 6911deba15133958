"""Alerts that act (engine/health.py, config `alerts:`): a run set to stop on an alert asks the trainer to stop, once
per alert episode, writes what it did to alerts.jsonl and the badge says it; `warn` (the default) only warns."""

from __future__ import annotations

from rloo_studio import runs
from rloo_studio.runs import alerts
from rloo_studio.config import AlertActions, RunConfig
from rloo_studio.engine.health import NO_SIGNAL_ADVICE, HealthWatch

FACTS = alerts.RunFacts(["r"], [1.0])


def _tied_steps(watch: HealthWatch, steps) -> list:
    reasons = []
    for step in steps:
        watch.on_values("r", {"prompts": ["p"] * 4, "completions": ["a", "b", "c", "d"]}, [0.0, 0.0, 0.0, 0.0])
        watch.on_metrics({"step": step})
        reasons.append(watch.stop_reason)
    return reasons


def test_no_signal_stops_after_the_chosen_steps_with_the_scans_advice(tmp_path):
    watch = HealthWatch(tmp_path, FACTS, num_generations=2, say=lambda line: None,
                        actions=AlertActions(on_no_signal="stop", no_signal_steps=5), hints=['add "Say <answer>."'])
    reasons = _tied_steps(watch, range(1, 7))
    assert reasons[:4] == [None] * 4 and reasons[4] is not None  # raised at step 3, acted at step 5
    assert "No learning signal since step 1" in reasons[4] and NO_SIGNAL_ADVICE in reasons[4]
    assert 'add "Say <answer>."' in reasons[4] and f"--resume {tmp_path}" in reasons[4]
    records = runs.read_jsonl(tmp_path / runs.ALERTS_FILE)
    assert [(r["event"], r["step"]) for r in records] == [("began", 3), (alerts.ACTION_EVENT, 5)]
    [shown] = alerts.current(records)
    assert shown["taken"] == "stop" and "alerts.on_no_signal: stop" in shown["done"] and "at step 5" in shown["done"]

    from rloo_studio.ui.run_view import alerts_html

    badge = alerts_html(tmp_path)
    assert 'data-taken="stop"' in badge and "Done:" in badge and "asked the run to stop at step 5" in badge

    # Resumed from the stop's checkpoint: the same episode does not stop the run again.
    resumed = HealthWatch(tmp_path, FACTS, num_generations=2, say=lambda line: None,
                          actions=AlertActions(on_no_signal="stop", no_signal_steps=5))
    resumed.rows = [{"step": s, alerts.NO_SIGNAL_SHARE_KEY: 1.0} for s in range(1, 7)]
    assert _tied_steps(resumed, range(7, 9)) == [None, None]


def test_warn_only_warns(tmp_path):
    watch = HealthWatch(tmp_path, FACTS, num_generations=2, say=lambda line: None)
    assert _tied_steps(watch, range(1, 6)) == [None] * 5
    assert [r["event"] for r in runs.read_jsonl(tmp_path / runs.ALERTS_FILE)] == ["began"]
    assert 'data-taken' not in __import__("rloo_studio.ui.run_view", fromlist=["x"]).alerts_html(tmp_path)


def test_a_hacking_alarm_stops_a_run_set_to_stop_on_hacking(tmp_path):
    said = []
    watch = HealthWatch(tmp_path, FACTS, num_generations=2, say=said.append, actions=AlertActions(on_hacking="stop"))
    watch.checks.append(alerts.probe_check(2, {"empty": 0.0}, [0.5, 0.5]))
    watch._update(2)
    assert watch.stop_reason is None  # no probe out-scores the real completions
    watch.checks.append(alerts.probe_check(4, {"rambling": 3.0}, [0.5, 0.5]))
    watch._update(4)
    assert watch.stop_reason and "Possible reward hacking since step 4" in watch.stop_reason
    assert "alerts.on_hacking: stop" in said[-1]
    assert HealthWatch(tmp_path, FACTS, 2, say=said.append).actions.on_hacking == "warn"  # the default


def test_the_config_section_is_checked():
    cfg = RunConfig.from_dict({"alerts": {"on_no_signal": "stpo", "no_signal_steps": 0}})
    problems = cfg.validate()
    assert any(p.startswith("alerts.on_no_signal: 'stpo' is not one of warn, stop") and "stop" in p for p in problems)
    assert "alerts.no_signal_steps: 0 must be greater than 0" in problems
    assert RunConfig.from_dict({"alerts": {"on_hacking": "stop"}}).to_dict()["alerts"]["on_hacking"] == "stop"


def test_a_held_out_plateau_is_an_alert_only_when_the_run_asks_for_it():
    checks = [alerts.heldout_check(s, m, None) for s, m in [(2, 0.2), (4, 0.5), (6, 0.45), (8, 0.5), (10, 0.3)]]
    assert not [a for a in alerts.find_alerts([], FACTS, (), checks) if a.kind == alerts.HELDOUT_PLATEAU]
    [alert] = [a for a in alerts.find_alerts([], FACTS, (), checks, heldout_patience=3) if a.kind == alerts.HELDOUT_PLATEAU]
    # The best check was at step 4 (0.5); steps 6, 8 and 10 did not beat it (a tie is no gain).
    assert (alert.began_step, alert.raised_step, alert.ended_step) == (6, 10, None)
    assert alert.numbers["best_step"] == 4 and alert.numbers["best"] == 0.5 and alert.numbers["checks"] == 3
    assert "checkpoint-4" in alert.explanation and "8 held-out prompts" in alert.explanation
    assert not [a for a in alerts.find_alerts([], FACTS, (), checks[:4], heldout_patience=3) if a.kind == alerts.HELDOUT_PLATEAU]


def test_a_plateau_stops_the_run_and_keeps_the_best_checkpoint(tmp_path):
    kept = []
    watch = HealthWatch(tmp_path, FACTS, num_generations=2, say=lambda line: None,
                        actions=AlertActions(on_heldout_plateau="stop", heldout_patience=2))
    watch.keep_checkpoint = kept.append
    means = iter([0.2, 0.6, 0.5, 0.55])
    watch.heldout = lambda: next(means)
    for step in (2, 4, 6):
        watch.on_checkpoint(step)
        assert watch.stop_reason is None
    watch.on_checkpoint(8)
    assert kept == [2, 4] and "checkpoint-4" in watch.stop_reason  # each new best when it was checked and "alerts.on_heldout_plateau: stop" in watch.stop_reason
    (tmp_path / "w").mkdir()
    (tmp_path / "off").mkdir()
    warned = HealthWatch(tmp_path / "w", FACTS, num_generations=2, say=lambda line: None,
                         actions=AlertActions(on_heldout_plateau="warn", heldout_patience=2))
    means = iter([0.2, 0.6, 0.5, 0.55])
    warned.heldout = lambda: next(means)
    for step in (2, 4, 6, 8):
        warned.on_checkpoint(step)
    assert warned.stop_reason is None
    assert [r["kind"] for r in runs.read_jsonl(tmp_path / "w" / runs.ALERTS_FILE)] == [alerts.HELDOUT_PLATEAU]
    # Off (the default): no such alert at all.
    off = HealthWatch(tmp_path / "off", FACTS, num_generations=2, say=lambda line: None)
    means = iter([0.2, 0.6, 0.5, 0.55])
    off.heldout = lambda: next(means)
    for step in (2, 4, 6, 8):
        off.on_checkpoint(step)
    assert runs.read_jsonl(tmp_path / "off" / runs.ALERTS_FILE) == []


def test_no_signal_can_switch_on_dynamic_sampling_instead(tmp_path):
    switched = []
    watch = HealthWatch(tmp_path, FACTS, num_generations=2, say=lambda line: None,
                        actions=AlertActions(on_no_signal="dynamic_sampling"))
    watch.switch_on_sampling = lambda: switched.append(True)
    assert _tied_steps(watch, range(1, 6)) == [None] * 5  # no stop
    assert switched == [True]
    [action] = [r for r in runs.read_jsonl(tmp_path / runs.ALERTS_FILE) if r["event"] == alerts.ACTION_EVENT]
    assert action["taken"] == "dynamic_sampling" and action["step"] == 3 and "switched on dynamic sampling" in action["done"]
    # A resumed run goes on sampling dynamically.
    assert HealthWatch(tmp_path, FACTS, 2, say=lambda line: None).sampling_on
    # On already (the config's dynamic_sampling.enabled): nothing to switch, nothing written.
    (tmp_path / "on").mkdir()
    on = HealthWatch(tmp_path / "on", FACTS, num_generations=2, say=lambda line: None,
                     actions=AlertActions(on_no_signal="dynamic_sampling"))
    on.sampling_on, on.switch_on_sampling = True, lambda: switched.append("again")
    _tied_steps(on, range(1, 5))
    assert switched == [True] and [r["event"] for r in runs.read_jsonl(tmp_path / "on" / runs.ALERTS_FILE)] == ["began"]
    assert any("alerts.on_no_signal: 'dynamic_sampling' works on one process" in p
               for p in RunConfig.from_dict({"alerts": {"on_no_signal": "dynamic_sampling"}}).validate(num_processes=2))


def test_a_hacking_alarm_can_roll_the_run_back(tmp_path):
    from rloo_studio.engine.health import ROLLED_BACK_DIR, roll_back

    watch = HealthWatch(tmp_path, FACTS, num_generations=2, say=lambda line: None, actions=AlertActions(on_hacking="rollback"))
    watch.checks.append(alerts.probe_check(2, {"empty": 0.0}, [0.5, 0.5]))
    watch.checks.append(alerts.probe_check(4, {"rambling": 3.0}, [0.5, 0.5]))
    watch._update(4)
    assert watch.rollback_from == 4 and "alerts.on_hacking: rollback" in watch.stop_reason
    assert [r["taken"] for r in runs.read_jsonl(tmp_path / runs.ALERTS_FILE) if r["event"] == alerts.ACTION_EVENT] == ["rollback"]
    # Held-out falling from the check at step 2 on: the weights from the next check (step 4) are suspect.
    falls = alerts.Alert(alerts.HELDOUT_FALLS, None, 6, 6, None, {"steps": [2, 4, 6]}, "", "")
    from rloo_studio.engine.health import suspect_from

    assert suspect_from(falls) == 4
    for step in (2, 4, 5):  # checkpoint folders as the trainer leaves them (weights, then trainer_state.json)
        folder = tmp_path / runs.CHECKPOINTS_DIR / f"checkpoint-{step}"
        folder.mkdir(parents=True)
        (folder / "trainer_state.json").write_text("{}")
        (folder / runs.ADAPTER_WEIGHT_FILES[0]).write_bytes(b"")
        (folder / "adapter_config.json").write_text("{}")
    note = roll_back(tmp_path, 4)
    assert [s for s, _ in runs.checkpoints(tmp_path)] == [2]
    assert sorted(p.name for p in (tmp_path / ROLLED_BACK_DIR).iterdir()) == ["checkpoint-4", "checkpoint-5"]
    assert "Rolled back to checkpoint-2" in note and runs.read_status(tmp_path)["last_checkpoint"] == 2
    assert "nothing was rolled back" in roll_back(tmp_path, 1) and [s for s, _ in runs.checkpoints(tmp_path)] == [2]


def test_a_hacking_alarm_can_raise_beta_and_train_on(tmp_path):
    set_to = []
    watch = HealthWatch(tmp_path, FACTS, num_generations=2, say=lambda line: None, actions=AlertActions(on_hacking="raise_beta"))
    watch.set_beta = set_to.append
    watch.checks.append(alerts.probe_check(4, {"rambling": 3.0}, [0.5, 0.5]))
    watch._update(4)
    assert set_to == [0.02] and watch.stop_reason is None and watch.facts.beta == 0.02  # from 0: the floor
    [action] = [r for r in runs.read_jsonl(tmp_path / runs.ALERTS_FILE) if r["event"] == alerts.ACTION_EVENT]
    assert action["taken"] == "raise_beta" and "from 0 to 0.02" in action["done"]
    watch = HealthWatch(tmp_path / "b", alerts.RunFacts(["r"], [1.0], beta=0.04), 2, say=lambda line: None,
                        actions=AlertActions(on_hacking="raise_beta"))
    (tmp_path / "b").mkdir()
    watch.set_beta = set_to.append
    watch.checks.append(alerts.probe_check(2, {"empty": 3.0}, [0.5, 0.5]))
    watch._update(2)
    assert set_to[-1] == 0.08  # doubled
    full = RunConfig.from_dict({"alerts": {"on_hacking": "raise_beta"}, "rloo": {"beta": 0.0}})
    assert any("'raise_beta' needs a reference model" in p for p in full.validate())
    assert not any("raise_beta" in p for p in RunConfig.from_dict({"alerts": {"on_hacking": "raise_beta"}, "lora": {},
                                                                   "rloo": {"beta": 0.0}}).validate())


def test_the_heldout_check_says_how_many_prompts_it_scored_when_there_are_few(tmp_path):
    said = []
    watch = HealthWatch(tmp_path, FACTS, num_generations=2, say=said.append)

    def check():
        return 0.0

    check.prompts = 3  # a run whose data holds back only 3 prompts
    watch.heldout = check
    watch._check_heldout(1)
    assert said == ["[rloo-studio] held-out check at step 1: mean reward 0 on all 3 held-out prompts (few: the check is rough)"]


def test_a_resumed_run_reads_back_the_checks_made_before_it(tmp_path):
    """Held-out checks 0.75 at step 10 and 0.50 at step 20, a stop, a resume from 20, then 0.50, 0.375, 0.50: the best is
    still checkpoint-10. Before, the resumed run began with no checks: it called checkpoint-30 the best (and kept it
    from rotation in place of 10), and an alert a check raised before the resume could never end."""
    actions = AlertActions(on_heldout_plateau="warn", heldout_patience=2, on_hacking="warn")
    kept: list[int] = []

    def watch_with(means):
        watch = HealthWatch(tmp_path, FACTS, num_generations=2, say=lambda line: None, actions=actions)
        watch.keep_checkpoint = kept.append
        values = iter(means)
        watch.heldout = lambda: next(values)
        return watch

    first = watch_with([0.75, 0.5])
    for step in (10, 20):
        first._check_heldout(step)
    resumed = watch_with([0.5, 0.375, 0.5])
    assert [c["step"] for c in resumed.heldout_checks] == [10, 20]
    for step in (30, 40, 50):
        resumed._check_heldout(step)
    assert kept == [10]  # no later check beat step 10's
    [plateau] = [a for a in alerts.current(runs.read_jsonl(tmp_path / runs.ALERTS_FILE)) if a["kind"] == alerts.HELDOUT_PLATEAU]
    assert plateau["numbers"]["best_step"] == 10, plateau["numbers"]
    # The hack probes' checks are read back too (so a hacking alarm raised before a resume can end after it).
    first.checks.clear()
    first._record("probes", 20, alerts.probe_check(20, {"rambling": 3.0}, [0.5, 0.5]))
    assert [c["step"] for c in HealthWatch(tmp_path, FACTS, 2, say=lambda line: None).checks] == [20]
