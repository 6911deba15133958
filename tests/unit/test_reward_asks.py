"""The prompt <-> reward check (rewards/asks.py): what each reward looks for, and whether the prompts ask for it."""

from rloo_studio.config import RewardSpec
from rloo_studio.rewards.asks import check_asks, reward_asks, warnings_from

USER_CODE = '''
import json, re

ANSWER = re.compile(r"<answer>(.*?)</answer>", re.DOTALL)

def tagged(completions, answer, **kwargs):
    out = []
    for c, expected in zip(completions, kwargs.get("answer", answer)):
        m = ANSWER.search(c[0]["content"] if isinstance(c, list) else c)
        out.append(1.0 if m and m.group(1).strip() == str(expected) else 0.0)
    return out

def structured(completions, **kwargs):
    scores = []
    for c in completions:
        try:
            data = json.loads(c)
        except ValueError:
            scores.append(0.0)
            continue
        scores.append(1.0 if "city" in data and data.get("country") else 0.5)
    return scores
'''


def _specs(tmp_path):
    (tmp_path / "rw.py").write_text(USER_CODE, encoding="utf-8")
    return [RewardSpec(name="think_format"), RewardSpec(name="numeric_answer", params={"mode": "boxed"}),
            RewardSpec(file="rw.py", function="tagged"), RewardSpec(file="rw.py", function="structured"),
            RewardSpec(name="valid_json", params={"required_keys": ["name"]}), RewardSpec(name="length_band")]


def test_what_each_reward_looks_for(tmp_path):
    asks = {(a.reward, a.looks_for) for a in reward_asks(_specs(tmp_path), tmp_path)}
    assert ("think_format", "<think>…</think>") in asks
    assert ("numeric_answer", r"\boxed{…}") in asks
    assert ("rw.py:tagged", "<answer>…</answer>") in asks
    assert ("rw.py:structured", 'a JSON object with the keys "city", "country"') in asks
    assert ("valid_json", 'a JSON object with the keys "name"') in asks
    assert not any(r == "length_band" for r, _ in asks)  # a length reward looks for no format
    # The column a user function compares with is what it reads, not a format: no JSON key, no ask of its own.
    assert not any("answer" in f and "JSON" in f for _, f in asks)


def test_a_tag_the_prompt_never_asks_for_is_flagged(tmp_path):
    specs = [RewardSpec(file="rw.py", function="tagged")]
    (tmp_path / "rw.py").write_text(USER_CODE, encoding="utf-8")
    found = check_asks(specs, tmp_path, None, ["What is 2 + 3?", "What is 7 - 4?"])
    assert [f["looks_for"] for f in found] == ["<answer>…</answer>"]
    assert not found[0]["asked"]
    warnings = warnings_from(found)
    assert len(warnings) == 1 and "rw.py:tagged" in warnings[0] and "data.system_prompt" in warnings[0]
    assert "<answer>" in found[0]["suggestion"] and "</answer>" in found[0]["suggestion"]


def test_a_tag_the_system_prompt_asks_for_is_not_flagged(tmp_path):
    specs = [RewardSpec(file="rw.py", function="tagged"), RewardSpec(name="think_format")]
    (tmp_path / "rw.py").write_text(USER_CODE, encoding="utf-8")
    system = "Think between <THINK> and </think>, then put the result in <answer></answer>."
    found = check_asks(specs, tmp_path, system, ["What is 2 + 3?"])
    assert all(f["asked"] for f in found) and warnings_from(found) == []
    assert {f["asked_where"] for f in found} == {"the system prompt"}


def test_asked_in_the_prompts_themselves_counts(tmp_path):
    found = check_asks([RewardSpec(name="numeric_answer", params={"mode": "boxed"})], tmp_path, None,
                       ["Give the result in \\boxed{}: 2 + 3", "Sum 1 and 1."])
    assert found[0]["asked"] and found[0]["asked_where"] == "1 of 2 prompts" and warnings_from(found) == []


def test_completions_that_already_write_it_turn_the_warning_into_a_note(tmp_path):
    spec = [RewardSpec(name="think_format")]
    written = check_asks(spec, tmp_path, None, ["2+2?"], ["<think>2+2</think>4", "<think>x</think>4", "4"])
    assert written[0]["matched"] == 2 and written[0]["completions"] == 3
    assert warnings_from(written) == [] and "2 of 3" in written[0]["note"]
    never = check_asks(spec, tmp_path, None, ["2+2?"], ["4", "four", "<think>x</think>4"])
    assert never[0]["matched"] == 1 and "1 of 3 sampled completions" in warnings_from(never)[0]


def test_json_keys_and_unreadable_code(tmp_path):
    specs = _specs(tmp_path)[3:5]
    found = check_asks(specs, tmp_path, "Reply in JSON with the keys name, city and country.", ["Where is Paris?"])
    assert all(f["asked"] for f in found)
    found = check_asks(specs, tmp_path, "Reply in JSON.", ["Where is Paris?"])
    assert [f["asked"] for f in found] == [False, False]  # the keys are never named
    assert '"city"' in found[0]["suggestion"]
    (tmp_path / "broken.py").write_text("def f(completions:\n", encoding="utf-8")
    assert reward_asks([RewardSpec(file="broken.py")], tmp_path) == []  # the pre-flight check reports the file itself


def test_the_preview_result_lists_what_each_reward_looks_for(tmp_path):
    from rloo_studio.rewards.preview import score

    (tmp_path / "rw.py").write_text(USER_CODE, encoding="utf-8")
    groups = [{"prompt": [{"role": "system", "content": "Answer briefly."}, {"role": "user", "content": "2 + 3?"}],
               "row": {"answer": "5"}, "completions": ["5", "<answer>5</answer>", "five"]}]
    result = score({"groups": groups, "num_generations": 3, "conversational": False, "base_dir": str(tmp_path),
                    "rewards": [{"file": "rw.py", "function": "tagged"}, {"name": "think_format"}], "probes": False})
    asks = {a["looks_for"]: a for a in result["asks"]}
    assert asks["<answer>…</answer>"]["matched"] == 1 and asks["<answer>…</answer>"]["warning"]
    assert asks["<think>…</think>"]["matched"] == 0 and "0 of 3 sampled completions" in asks["<think>…</think>"]["warning"]
    groups[0]["prompt"][0]["content"] = "Think in <think></think>, answer in <answer></answer>."  # the system message asks
    result = score({"groups": groups, "num_generations": 3, "base_dir": str(tmp_path),
                    "rewards": [{"file": "rw.py", "function": "tagged"}, {"name": "think_format"}], "probes": False})
    assert all(a["asked"] and not a["warning"] for a in result["asks"])
    # Pasted completions come with bare prompts: the run's system prompt, which the request carries, counts too.
    groups[0]["prompt"] = "2 + 3?"
    bare = {"groups": groups, "num_generations": 3, "base_dir": str(tmp_path), "probes": False,
            "rewards": [{"name": "think_format"}], "system_prompt": "Think in <think></think> first."}
    [ask] = score(bare)["asks"]
    assert ask["asked"] and ask["asked_where"] == "the system prompt"


def test_preflight_warns_without_refusing(tmp_path):
    from rloo_studio.config import RunConfig
    from rloo_studio.engine.preflight import prompt_warnings
    from rloo_studio.data import load_rows

    (tmp_path / "d.jsonl").write_text('{"prompt": "2 + 3?", "answer": "5"}\n{"prompt": "1 + 1?", "answer": "2"}\n')
    cfg = RunConfig.from_dict({"data": {"source": "d.jsonl"}, "rewards": [{"name": "numeric_answer", "params": {"mode": "hash"}}]},
                              base_dir=tmp_path)
    rows = load_rows(cfg.data, cfg.base_dir)
    [warning] = prompt_warnings(cfg, rows)
    assert "`numeric_answer` looks for #### before the answer" in warning and "any of the 2 prompts" in warning
    cfg.data.system_prompt = "End with #### and the number."
    assert prompt_warnings(cfg, rows) == []


def test_the_first_training_batch_says_whether_the_model_writes_the_format_unasked(tmp_path):
    from rloo_studio.runs import alerts
    from rloo_studio.engine.health import HealthWatch

    said = []
    watch = HealthWatch(tmp_path, alerts.RunFacts(["think_format"], [1.0]), num_generations=2, say=said.append)
    watch.formats = lambda completions: check_asks([RewardSpec(name="think_format")], tmp_path, None, ["2+2?"], completions)
    batch = {"prompts": ["2+2?"] * 4, "completions": ["<think>2+2</think>4", "<think>x</think>4", "<think>y</think>4", "4"]}
    watch.on_values("think_format", batch, [1.0, 1.0, 1.0, 0.0])
    assert said == [("[rloo-studio] first batch: 3 of 4 completions write <think>…</think> unasked, so the warning about "
                     "`think_format` above does not apply.")]
    watch.on_values("think_format", {**batch, "completions": list(batch["completions"])}, [0.0] * 4)
    assert len(said) == 1  # the first batch only


def test_a_check_that_cannot_run_says_so_and_never_stops_training(tmp_path, monkeypatch):
    from rloo_studio.config import RunConfig
    from rloo_studio.data import Rows
    from rloo_studio.engine import preflight

    def broken(*args, **kwargs):
        raise RuntimeError("unreadable")

    monkeypatch.setattr(preflight, "check_asks", broken)
    cfg = RunConfig.from_dict({"rewards": [{"name": "think_format"}]}, base_dir=tmp_path)
    rows = Rows([{"prompt": "2+2?"}], None, ["prompt"], "test")
    assert preflight.prompt_warnings(cfg, rows) == ["the prompt <-> reward check could not run (RuntimeError: unreadable); skipped"]
    assert preflight.prompt_hints(cfg, rows) == []


def test_the_rewards_tab_says_what_no_prompt_asks_for_in_the_pages_words(tmp_path):
    from rloo_studio.rewards.preview import score
    from rloo_studio.ui.rewards_tab import preview_tables

    groups = [{"prompt": "2 + 3?", "row": {"answer": "5"}, "completions": ["5", "<think>x</think>5", "five"]}]
    result = score({"groups": groups, "num_generations": 3, "base_dir": str(tmp_path), "probes": False,
                    "rewards": [{"name": "think_format"}]})
    findings = preview_tables(result)[2]
    assert ("⚠️ **Not asked for:** `think_format` looks for `<think>…</think>`, but neither the system prompt (Data tab) "
            "nor any of the 1 prompts here asks for it; 1 of 3 completions write it.") in findings
    assert ("Add to the system prompt: “First think step by step between &lt;think&gt; and &lt;/think&gt;, then give the "
            "answer.”") in findings  # the page shows the tags as written
    groups[0]["completions"] = ["<think>x</think>5", "<think>y</think>5", "5"]
    result = score({"groups": groups, "num_generations": 3, "base_dir": str(tmp_path), "probes": False,
                    "rewards": [{"name": "think_format"}]})
    assert "ℹ️ **Not asked for, written anyway:** 2 of 3 completions write `<think>…</think>`" in preview_tables(result)[2]


def test_a_tag_a_reward_only_cuts_off_is_not_looked_for(tmp_path):
    """`text.split("</think>")[-1]` drops any thinking before reading the reply: the reward does not need the tag. It
    was read as looking for <think>…</think>, with a warning, a system prompt to add and a warm-up to tick (a walk)."""
    (tmp_path / "hours.py").write_text(
        "def states_hours(completions, hours, **kwargs):\n"
        "    texts = [c.split('</think>')[-1].strip() for c in completions]\n"
        "    return [1.0 if t.endswith(str(h)) else 0.0 for t, h in zip(texts, hours)]\n\n"
        "def needs_thinking(completions, **kwargs):\n"
        "    return [1.0 if '</think>' in c and c.partition('</think>')[2] else 0.0 for c in completions]\n", encoding="utf-8")
    asks = {(a.reward, a.looks_for) for a in reward_asks([RewardSpec(file="hours.py", function="states_hours"),
                                                          RewardSpec(file="hours.py", function="needs_thinking")], tmp_path)}
    assert asks == {("hours.py:needs_thinking", "<think>…</think>")}  # `in` looks for it; split and partition cut


def test_tags_in_the_rewards_tab_findings_are_shown_not_taken_for_html():
    """The page's Markdown drops what looks like an HTML tag: "24 of 24 completions write , which …", and a judge's
    "Score: +17</think>601" read as "Score: +17601" (a walk). Every tag outside a code span is escaped."""
    import re

    from rloo_studio.ui.rewards_tab import preview_tables

    result = {"functions": {"judge": {"weight": 1.0, "mean": None, "std": None, "min": None, "max": None, "none": 1,
                                      "errors": [{"function": "judge", "lines": [], "completion": "x",
                                                  "error": "RewardError: the reply has no verdict of the form 'Score: N' "
                                                           "(it reads 'Score: +17</think>601')"}]}},
              "rows": [{"group": 0, "prompt": "p", "completion": "x", "rewards": {"judge": None}, "total": None,
                        "baseline": None, "advantage": 0.0}],
              "asks": [{"reward": "think_format", "looks_for": "<think>…</think>", "prompts": 1, "matched": 1, "completions": 1,
                        "warning": False, "note": True, "suggestion": "First think between <think> and </think>."}]}
    findings = preview_tables(result)[2]
    outside_code = re.sub(r"`[^`]*`", "", findings)
    assert not re.search(r"</?think>", outside_code), findings
    assert "Score: +17&lt;/think&gt;601" in findings and "write `<think>…</think>`" in findings


def test_the_format_warm_up_offer_never_says_completions_tie_when_the_rewards_tell_them_apart():
    """The offer said "Without it every prompt's completions tie at the same reward", under "✅ Learnability: Every
    prompt's completions got different rewards" (a walk): its reason follows what the same completions show."""
    from rloo_studio.ui.rewards_tab import preview_tables

    rare = [{"reward": "rw.py:tagged", "looks_for": "<answer>…</answer>", "prompts": 4, "matched": 0, "completions": 16,
             "warning": True, "note": False, "suggestion": "Give the answer between <answer> and </answer>."}]
    base = {"functions": {}, "rows": [], "asks": rare}
    signal = {**base, "learnability": {"no_signal_share": 0.0, "verdict": "Every prompt's completions got different rewards."}}
    flat = {**base, "learnability": {"no_signal_share": 1.0, "verdict": "Every completion got the same total reward."}}
    said = preview_tables(signal)[2]
    assert "format warm-up could help" in said and "tie at the same reward" not in said
    assert "Until some do, `rw.py:tagged` gives them all the same score and teaches nothing (your other rewards still" in said
    assert "every prompt's completions tie at the same reward" in preview_tables(flat)[2]
