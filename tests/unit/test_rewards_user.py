"""Unit tests for user reward code: the loader, the training-time guard, sample recording, scoring,
and turning a config's reward specs into callables. Literal inputs only; no models, no network."""

import asyncio
import math
import sys
import textwrap
from types import SimpleNamespace

import pytest

from rloo_studio.config import RewardSpec
from rloo_studio.errors import RewardError
from rloo_studio.rewards import LoadedReward, build_rewards, check_reward_specs, think_end_token_id
from rloo_studio.rewards.runtime import SampleRecorder, guard
from rloo_studio.rewards.scoring import all_equal_groups, leave_one_out_advantages, weighted_totals
from rloo_studio.rewards.user import TRL_REWARD_ARGS, load_reward_file, load_reward_source, public_function_names


def src(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


def reward_error(func, *args, **kwargs) -> RewardError:
    with pytest.raises(RewardError) as info:
        func(*args, **kwargs)
    return info.value


TWO_REWARDS = src('''
    from math import sqrt
    from os.path import join as _join

    LIMIT = 10

    def short(completions, **kwargs):
        return [1.0 if len(c) < LIMIT else 0.0 for c in completions]

    async def rooted(completions, **kwargs):
        return [sqrt(len(c)) for c in completions]

    def _helper(x):
        return x

    class NotAFunction:
        pass
''')


# ------------------------------------------------------------------------------ loading


def test_load_returns_every_public_function():
    functions = load_reward_source(TWO_REWARDS, "rw.py")
    assert list(functions) == ["short", "rooted"]  # not sqrt (imported), not _helper, not the class
    assert functions["short"](completions=["abc", "abcdefghijklmnop"]) == [1.0, 0.0]
    assert asyncio.run(functions["rooted"](completions=["abcd"])) == [2.0]
    assert public_function_names(TWO_REWARDS) == ["short", "rooted"]


def test_load_only_named_functions():
    functions = load_reward_source(TWO_REWARDS, "rw.py", names=["rooted"])
    assert list(functions) == ["rooted"]


def test_load_missing_function_lists_defined_ones():
    err = reward_error(load_reward_source, TWO_REWARDS, "rw.py", names=["shorter", "short"])
    assert err.what == "rw.py has no function named shorter"
    assert err.why == "the functions it defines are: short, rooted"
    assert "`function:`" in err.fix


def test_load_file_without_public_functions():
    err = reward_error(load_reward_source, "def _private(completions, **kwargs):\n    return []\n", "rw.py")
    assert err.what == "rw.py defines no public reward function"
    assert "def my_reward(completions, **kwargs)" in err.fix


def test_syntax_error_names_file_line_and_text():
    code = src('''
        def good(completions, **kwargs):
            return [1.0 for _ in completions]

        def bad(completions, **kwargs)
            return []
    ''')
    err = reward_error(load_reward_source, code, "my_rewards.py")
    assert "syntax error at my_rewards.py:4" in err.what
    assert "def bad(completions, **kwargs)" in err.what
    assert err.fix == "fix line 4 of my_rewards.py"
    assert "What to do: fix line 4 of my_rewards.py." in err.message()
    # The quoted line ends as written: "def bad(completions, **kwargs)." read as a full stop in the code (a walk).
    assert "\n    def bad(completions, **kwargs)\nWhy:" in err.message(), err.message()


def test_missing_module_suggests_installing():
    err = reward_error(load_reward_source, "import not_a_module_xyz\n\ndef r(completions, **kwargs):\n    return []\n", "rw.py")
    assert "ModuleNotFoundError" in err.what
    assert "not_a_module_xyz" in err.what
    assert "pip install not_a_module_xyz" in err.fix
    assert "rw.py:1" in err.why


def test_exception_at_import_time_names_line_of_a_file(tmp_path):
    path = tmp_path / "rw.py"
    path.write_text("def r(completions, **kwargs):\n    return []\n\nTABLE = {}\nVALUE = TABLE['missing']\n", encoding="utf-8")
    err = reward_error(load_reward_file, path)
    assert err.what == "reward code failed while being loaded: KeyError: 'missing'"
    assert f"{path.name}:5 in <module>: VALUE = TABLE['missing']" in err.why


def test_exception_at_import_time_shows_line_of_in_memory_source():
    # The app's editor hands code to load_reward_source without a file on disk: the message
    # must still show the offending line's text, not just its number.
    code = "def r(completions, **kwargs):\n    return []\n\nTABLE = {}\nVALUE = TABLE['missing']\n"
    err = reward_error(load_reward_source, code)
    assert err.what == "reward code failed while being loaded: KeyError: 'missing'"
    assert "<rewards>:5 in <module>: VALUE = TABLE['missing']" in err.why


def test_sys_exit_at_import_is_caught():
    code = "import sys\nsys.exit(3)\n\ndef r(completions, **kwargs):\n    return []\n"
    before = set(sys.modules)
    err = reward_error(load_reward_source, code, "exits.py")
    assert err.what == "reward code failed while being loaded: SystemExit: 3"
    assert "exits.py:2" in err.why
    assert "sys.exit()" in err.fix
    # Still here: the process did not exit, and the half-loaded module was not left registered.
    assert set(sys.modules) - before == set()


def test_function_without_completions_or_kwargs_is_refused():
    code = "\n\ndef score(texts):\n    return [0.0 for _ in texts]\n"
    err = reward_error(load_reward_source, code, "rw.py")
    assert err.what == "rw.py:3: reward function `score` has no `completions` parameter"
    assert err.fix.startswith("write it as `def score(completions, **kwargs):`") and "rename it `_score`" in err.fix


def test_function_without_kwargs_missing_some_trl_args_is_refused():
    code = "def score(completions, prompts):\n    return [0.0 for _ in completions]\n"
    err = reward_error(load_reward_source, code, "rw.py")
    assert "reward function `score` does not accept completion_ids, log_extra, log_metric, trainer_state" in err.what
    assert "add `**kwargs`" in err.fix


def test_function_without_kwargs_must_accept_dataset_columns():
    params = ", ".join(TRL_REWARD_ARGS)
    code = f"def score({params}):\n    return [0.0 for _ in completions]\n"
    err = reward_error(load_reward_source, code, "rw.py", extra_args=("answer",))
    assert "does not accept answer" in err.what


def test_function_accepting_every_argument_without_kwargs_is_accepted():
    params = ", ".join(TRL_REWARD_ARGS)
    code = f"def score({params}, answer):\n    return [float(a == c) for a, c in zip(answer, completions)]\n"
    functions = load_reward_source(code, "rw.py", extra_args=("answer",))
    assert list(functions) == ["score"]
    kwargs = {k: None for k in TRL_REWARD_ARGS}
    assert functions["score"](**{**kwargs, "completions": ["1", "2"], "answer": ["1", "3"]}) == [1.0, 0.0]


def test_positional_only_parameters_are_refused():
    err = reward_error(load_reward_source, "def score(completions, /, **kwargs):\n    return []\n", "rw.py")
    assert "positional-only parameters ['completions']" in err.what


def test_name_rebound_to_non_function():
    err = reward_error(load_reward_source, "def score(completions, **kwargs):\n    return []\n\nscore = 3\n", "rw.py")
    assert err.what == "rw.py: `score` is not a function after the file ran"


def test_load_reward_file(tmp_path):
    path = tmp_path / "rewards.py"
    path.write_text(TWO_REWARDS, encoding="utf-8")
    assert list(load_reward_file(path, ["short"])) == ["short"]


def test_load_reward_file_missing(tmp_path):
    err = reward_error(load_reward_file, tmp_path / "nope.py")
    assert err.what == f"reward file not found: {tmp_path / 'nope.py'}"
    assert "`file:`" in err.fix


def test_load_reward_file_not_utf8(tmp_path):
    path = tmp_path / "rewards.py"
    path.write_bytes("# caf\xe9\ndef r(completions, **kwargs):\n    return []\n".encode("latin-1"))
    err = reward_error(load_reward_file, path)
    assert "is not UTF-8 text" in err.what


# ------------------------------------------------------------------------------ guard


def test_guard_passes_values_and_keeps_name():
    def my_reward(completions, **kwargs):
        return [1, None, 0.5]

    wrapped = guard(my_reward, "my_reward")
    assert wrapped.__name__ == "my_reward"
    assert wrapped(completions=["a", "b", "c"]) == [1.0, None, 0.5]
    assert guard(my_reward, "renamed").__name__ == "renamed"


def test_guard_wrong_number_of_values():
    wrapped = guard(lambda completions, **kw: [1.0], "too_few")
    err = reward_error(wrapped, completions=["a", "b", "c"])
    assert err.what == "reward function `too_few` returned 1 values for 3 completions"
    assert "one float (or None) per item" in err.fix


def test_guard_string_value_names_index():
    wrapped = guard(lambda completions, **kw: [1.0, "0.5"], "stringy")
    err = reward_error(wrapped, completions=["a", "b"])
    assert err.what == "reward function `stringy` returned '0.5' (str) for completion #1"
    assert "float(...)" in err.fix


def test_guard_non_list_return():
    err = reward_error(guard(lambda completions, **kw: 1.0, "scalar"), completions=["a"])
    assert err.what == "reward function `scalar` returned float, not a list"
    assert "return a list with 1 numbers" in err.fix
    err = reward_error(guard(lambda completions, **kw: "1", "text"), completions=["a"])
    assert err.what == "reward function `text` returned str, not a list"


def test_guard_exception_names_function_and_user_line(tmp_path):
    path = tmp_path / "rewards.py"
    path.write_text(src('''
        def ratio(completions, **kwargs):
            lengths = [len(c) for c in completions]
            return [1 / n for n in lengths]
    '''), encoding="utf-8")
    fn = load_reward_file(path)["ratio"]
    wrapped = guard(fn, "ratio", source_file=str(path))
    err = reward_error(wrapped, completions=["", "abc"])
    assert err.what == "reward function `ratio` raised ZeroDivisionError: division by zero"
    assert f"{path.name}:3 in ratio: return [1 / n for n in lengths]" in err.why
    assert "first completion of the batch: ''" in err.why
    assert "return None for ones it cannot score" in err.fix


def test_guard_passes_reward_errors_and_keyboard_interrupt_through():
    original = RewardError("inner problem")

    def raises_reward_error(completions, **kwargs):
        raise original

    with pytest.raises(RewardError) as info:
        guard(raises_reward_error, "r")(completions=["a"])
    assert info.value is original

    def interrupted(completions, **kwargs):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        guard(interrupted, "r")(completions=["a"])


def test_guard_turns_sys_exit_into_reward_error():
    def exits(completions, **kwargs):
        sys.exit(1)

    err = reward_error(guard(exits, "exits"), completions=["a"])
    assert "reward function `exits` raised SystemExit" in err.what


def test_guard_async_function():
    async def slow(completions, **kwargs):
        await asyncio.sleep(0)
        return [len(c) for c in completions]

    async def broken(completions, **kwargs):
        return [1.0]

    wrapped = guard(slow, "slow")
    assert wrapped.__name__ == "slow"
    assert asyncio.iscoroutinefunction(wrapped)
    assert asyncio.run(wrapped(completions=["ab", "c"])) == [2.0, 1.0]
    with pytest.raises(RewardError) as info:
        asyncio.run(guard(broken, "broken")(completions=["a", "b"]))
    assert info.value.what == "reward function `broken` returned 1 values for 2 completions"


def test_guard_reports_values_to_callback():
    seen = []
    wrapped = guard(lambda completions, **kw: [1, 2], "r", on_values=lambda n, kw, v: seen.append((n, kw["completions"], v)))
    wrapped(completions=["a", "b"])
    assert seen == [("r", ["a", "b"], [1.0, 2.0])]


# ------------------------------------------------------------------------------ SampleRecorder


def chat(text):
    return [{"role": "assistant", "content": text}]


def test_sample_recorder_writes_rows_with_the_trainers_advantages():
    written = []
    recorder = SampleRecorder(["fa", "fb"], [1.0, 2.0], num_generations=3, groups_per_step=1, write=written.append)
    fa = guard(lambda completions, **kw: [1.0, 0.0, 0.5, 0.0, 0.0, 0.0], "fa", on_values=recorder.on_values)
    fb = guard(lambda completions, **kw: [0.5, None, 0.0, 1.0, 1.0, 1.0], "fb", on_values=recorder.on_values)
    completions = [chat("<think>add</think>4"), chat("5"), chat("<think>hm</think> four "), chat("x"), chat("y"), chat("z")]
    prompts = [[{"role": "user", "content": "2+2?"}]] * 3 + [[{"role": "user", "content": "other"}]] * 3
    kwargs = dict(prompts=prompts, completions=completions, trainer_state=SimpleNamespace(global_step=4))

    fa(**kwargs)
    recorder.on_trained([0.0] * 6, None)
    assert written == []  # fb has not reported yet: nothing to write
    fa(**kwargs)
    fb(**kwargs)
    assert written == []  # scored, but the trainer has not handed over its advantages yet
    trained = [1.5, -1.25, -0.25, 0.125, 0.0, -0.125]  # whatever TRL trains on, e.g. with beta > 0
    recorder.on_trained(trained, [0.5, 0.0, -0.25, 0.1, 0.2, 0.3])
    assert len(written) == 1
    rows = written[0]
    assert len(rows) == 3  # groups_per_step = 1 group of 3
    assert [r["step"] for r in rows] == [5, 5, 5]  # completions from global_step 4 train step 5
    assert [r["group"] for r in rows] == [0, 0, 0]
    assert [r["rewards"] for r in rows] == [{"fa": 1.0, "fb": 0.5}, {"fa": 0.0, "fb": None}, {"fa": 0.5, "fb": 0.0}]
    # total = weighted nansum: 1 + 2*0.5 = 2.0; 0 (fb missing) = 0.0; 0.5 + 0 = 0.5
    assert [r["total"] for r in rows] == [2.0, 0.0, 0.5]
    # The trainer's advantages and KL penalties, not a leave-one-out recomputed from the totals.
    assert [r["advantage"] for r in rows] == trained[:3]
    assert [r["kl_penalty"] for r in rows] == [0.5, 0.0, -0.25]
    assert rows[0]["prompt"] == "[user] 2+2?"
    assert (rows[0]["completion"], rows[0]["thinking"], rows[0]["answer"]) == ("<think>add</think>4", "add", "4")
    assert (rows[1]["thinking"], rows[1]["answer"]) == (None, "5")
    assert rows[2]["answer"] == "four"

    # The next batch (a new completions list) starts afresh.
    fa(**{**kwargs, "completions": list(completions), "trainer_state": SimpleNamespace(global_step=5)})
    fb(**{**kwargs, "completions": kwargs["completions"]})  # an old batch's list: does not complete the new one
    recorder.on_trained(trained, None)
    assert len(written) == 1


def test_sample_recorder_writes_several_groups_and_step_without_state():
    written = []
    recorder = SampleRecorder(["only"], [0.5], num_generations=2, groups_per_step=5, write=written.append)
    recorder.on_values("only", {"completions": ["a", "b", "c", "d", "e"], "prompts": ["p", "p", "q", "q", "r"]},
                       [1.0, 3.0, 2.0, 2.0, 9.0])
    recorder.on_trained([-1.0, 1.0, 0.0, 0.0, 0.0], None)
    (rows,) = written
    assert len(rows) == 4  # 2 complete groups; the odd completion is not shown
    assert [r["step"] for r in rows] == [1, 1, 1, 1]
    assert [r["group"] for r in rows] == [0, 0, 1, 1]
    assert [r["total"] for r in rows] == [0.5, 1.5, 1.0, 1.0]
    assert [r["advantage"] for r in rows] == [-1.0, 1.0, 0.0, 0.0]
    assert [r["kl_penalty"] for r in rows] == [None] * 4  # beta = 0: no KL term
    assert [r["prompt"] for r in rows] == ["p", "p", "q", "q"]


def test_sample_recorder_disabled_and_partial_groups():
    written = []
    off = SampleRecorder(["a"], [1.0], num_generations=2, groups_per_step=0, write=written.append)
    off.on_values("a", {"completions": ["x", "y"]}, [1.0, 0.0])
    off2 = SampleRecorder(["a"], [1.0], num_generations=2, groups_per_step=2, write=written.append, enabled=False)
    off2.on_values("a", {"completions": ["x", "y"]}, [1.0, 0.0])
    partial = SampleRecorder(["a"], [1.0], num_generations=4, groups_per_step=2, write=written.append)
    partial.on_values("a", {"completions": ["x", "y"]}, [1.0, 0.0])  # fewer completions than one group
    for recorder in (off, off2, partial):
        recorder.on_trained([0.5, -0.5], None)
    assert written == []


# ------------------------------------------------------------------------------ scoring


def test_leave_one_out_advantages_examples():
    assert leave_one_out_advantages([1.0, 0.0, 0.0], 3) == [1.0, -0.5, -0.5]
    assert leave_one_out_advantages([1.0, None, 0.0, 2.0, 2.0, 2.0], 3) == [1.0, 0.0, -1.0, 0.0, 0.0, 0.0]
    assert leave_one_out_advantages([3.0, float("nan"), 1.0, 5.0], 4) == pytest.approx([0.0, 0.0, -3.0, 3.0])
    # Only one scored completion: no baseline, so no signal.
    assert leave_one_out_advantages([None, 4.0, None], 3) == [0.0, 0.0, 0.0]
    assert leave_one_out_advantages([], 2) == []


def test_leave_one_out_advantages_bad_group_size():
    with pytest.raises(ValueError, match="num_generations must be at least 2, got 1"):
        leave_one_out_advantages([1.0, 2.0], 1)
    with pytest.raises(ValueError, match="5 totals cannot be split into groups of 2"):
        leave_one_out_advantages([1.0] * 5, 2)


def test_weighted_totals():
    assert weighted_totals([[1.0, 0.0, None], [0.5, None, None]], [1.0, 2.0]) == [2.0, 0.0, None]
    assert weighted_totals([[float("nan"), 2], [3, 4]], [0.5, -1.0]) == [-3.0, -3.0]
    assert weighted_totals([], []) == []


def test_all_equal_groups():
    assert all_equal_groups([1.0, 1.0, None, 0.0, 1.0, 0.0], 3) == [True, False]
    assert all_equal_groups([None, None, 0.5, 0.5 + 1e-12], 2) == [True, True]
    assert all_equal_groups([0.1, 0.2], 2) == [False]


# ------------------------------------------------------------------------------ check_reward_specs / build_rewards


def test_check_reward_specs_fine(tmp_path):
    (tmp_path / "rw.py").write_text(TWO_REWARDS, encoding="utf-8")
    specs = [RewardSpec(name="numeric_answer"), RewardSpec(file="rw.py", weight=0.5)]
    assert check_reward_specs(specs, tmp_path, ["prompt", "answer"]) == []


def test_check_reward_specs_unknown_builtin():
    (problem,) = check_reward_specs([RewardSpec(name="numeric_answr")])
    assert problem.startswith("rewards[0] (numeric_answr): unknown builtin reward `numeric_answr` — did you mean `numeric_answer`?")
    assert "use `file:` for your own code" in problem


def test_check_reward_specs_bad_params():
    problems = check_reward_specs([RewardSpec(name="numeric_answer", params={"tolerence": 0.1}),
                                   RewardSpec(name="think_length", params={"min_tokens": 10, "max_tokens": 5})])
    assert len(problems) == 2
    assert problems[0].startswith("rewards[0] (numeric_answer): reward `numeric_answer`:")
    assert "tolerence" in problems[0]
    assert problems[0].endswith("— fix its `params:`")
    assert problems[1].startswith("rewards[1] (think_length): reward `think_length`: think_length: min_tokens (10) exceeds max_tokens (5)")


def test_check_reward_specs_missing_file(tmp_path):
    (problem,) = check_reward_specs([RewardSpec(file="missing.py")], tmp_path)
    assert problem == (f"rewards[0] (missing.py:*): reward file not found: {tmp_path / 'missing.py'}"
                       " — fix `file:` in the rewards section")


def test_check_reward_specs_missing_answer_column():
    problems = check_reward_specs([RewardSpec(name="numeric_answer"),
                                   RewardSpec(name="exact_match", params={"answer_column": "solution"})],
                                  dataset_columns=["prompt", "answr"])
    assert problems == [
        "rewards[0] (numeric_answer): the dataset has no column `answer` — did you mean `answr`? (columns: prompt, answr)"
        " — set params.answer_column",
        "rewards[1] (exact_match): the dataset has no column `solution` (columns: prompt, answr) — set params.answer_column",
    ]
    # Without known columns the check cannot be made.
    assert check_reward_specs([RewardSpec(name="numeric_answer")]) == []


def test_check_reward_specs_duplicate_names():
    problems = check_reward_specs([RewardSpec(name="think_format"), RewardSpec(name="think_format", weight=2.0)])
    assert len(problems) == 1
    assert problems[0].startswith("rewards: two rewards have the same name: think_format — ")


def test_check_reward_specs_reports_duplicates_alongside_other_problems():
    problems = check_reward_specs([RewardSpec(name="no_such_reward"), RewardSpec(name="think_format"),
                                   RewardSpec(name="think_format")])
    assert any("unknown builtin reward `no_such_reward`" in p for p in problems), problems
    assert any("two rewards have the same name: think_format" in p for p in problems), problems


def test_check_reward_specs_function_must_accept_columns_without_kwargs(tmp_path):
    params = ", ".join(TRL_REWARD_ARGS)
    (tmp_path / "rw.py").write_text(f"def strict({params}):\n    return [0.0 for _ in completions]\n", encoding="utf-8")
    (problem,) = check_reward_specs([RewardSpec(file="rw.py")], tmp_path, ["prompt", "answer"])
    assert "reward function `strict` does not accept answer" in problem


class FakeTokenizer:
    def __init__(self, vocab, unk_token_id=0, pieces=None):
        self.vocab = vocab
        self.unk_token_id = unk_token_id
        self.pieces = pieces or {}

    def convert_tokens_to_ids(self, token):
        return self.vocab.get(token, self.unk_token_id)

    def encode(self, text, add_special_tokens=True):
        return self.pieces.get(text, [7, 8, 9])


def test_think_end_token_id():
    assert think_end_token_id(None) is None
    assert think_end_token_id(FakeTokenizer({"</think>": 151668})) == 151668
    assert think_end_token_id(FakeTokenizer({})) is None  # unknown token, encodes to several ids
    assert think_end_token_id(FakeTokenizer({}, pieces={"</think>": [55]})) == 55


def test_build_rewards_fills_in_think_end_token_id():
    loaded = build_rewards([RewardSpec(name="think_length", weight=0.2, params={"min_tokens": 1, "max_tokens": 4})],
                           tokenizer=FakeTokenizer({"</think>": 151668}), check_only=False)
    (reward,) = loaded
    assert isinstance(reward, LoadedReward)
    assert (reward.name, reward.weight, reward.source_file) == ("think_length", 0.2, None)
    assert reward.func.__name__ == "think_length"
    # Closes at position 2 (inside the band), closes at once (0 tokens of reasoning), never closes.
    scores = reward.func(completions=["a", "b", "c"], completion_ids=[[5, 6, 151668, 1], [151668], [5, 6]])
    assert scores == [1.0, 0.0, -1.0]


def test_build_rewards_tokenizer_without_think_token():
    err = reward_error(build_rewards, [RewardSpec(name="think_length")], tokenizer=FakeTokenizer({}), check_only=False)
    assert "`</think>` to be one token" in err.what
    assert "think_format" in err.fix


def test_build_rewards_file_specs(tmp_path):
    (tmp_path / "rw.py").write_text(TWO_REWARDS, encoding="utf-8")
    loaded = build_rewards([RewardSpec(file="rw.py", weight=0.5), RewardSpec(name="think_format", weight=2)], tmp_path)
    assert [(r.name, r.weight) for r in loaded] == [("short", 0.5), ("rooted", 0.5), ("think_format", 2.0)]
    assert loaded[0].source_file == str(tmp_path / "rw.py")
    assert loaded[2].source_file is None
    assert loaded[0].func(completions=["ok"]) == [1.0]
    assert math.isclose(asyncio.run(loaded[1].func(completions=["abcd"]))[0], 2.0)


def test_build_rewards_model_spec_check_only_is_named_after_the_model():
    (reward,) = build_rewards([RewardSpec(model="org/my-reward-model", weight=0.3)], check_only=True)
    assert reward.name == "reward_model_my_reward_model"
    assert reward.func.__name__ == "reward_model_my_reward_model"
    assert reward.weight == 0.3
    assert check_reward_specs([RewardSpec(model="org/my-reward-model")]) == []
