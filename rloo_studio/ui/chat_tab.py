"""The Chat tab: the base and the tuned model side by side, one prompt box, a verified badge per pane.

Both panes come from one model in the inference worker: the base pane with the run's adapter
switched off, the tuned pane with it on, the same chat template as training, the same sampling
settings and seed (or greedy decoding, when chosen). A note beside the panes says that one reply is
one sample, not evidence: the Evaluate tab is where a difference is measured. Each badge shows the adapter state the worker read from the LoRA layers while
generating that reply. A reply that hit *Max new tokens* before it ended is marked cut off (in its thinking, when the
thought was still open), one that says nothing after its thought empty, and one stuck in a repetition loop with the
repeated sentence (`run_view.reply_mark_list`, the marks of every completions table); the marks are shown, never sent
back to the model as part of the conversation. Thinking (`<think>…</think>`, or a thought opened and not closed, the
prompt's own `<think>` included when a thinking template opened it) is shown collapsed above the answer, by one rule on
both panes (`pane`). Blind mode hides which pane is which until the
person says which reply is better; the verdict is appended to the run's preferences.jsonl. Picking a run sets the
sampling controls to what the run trained with (`trained_sampling`: its effective temperature, top-p and completion
length); one line says the settings in use and, where they differ, the run's (`sampling_line`, rewritten at every
change in Settings), and the line under the replies says what they were generated with. This module only talks to the
worker through `rloo_studio.workers.inference`; it loads no model itself.
"""

from __future__ import annotations

import random
import re
import time
from pathlib import Path

import gradio as gr

from .. import runs
from ..errors import StudioError
from ..protocol import Progress, Reply, TextDelta
from ..workers.inference import InferenceWorker
from ..rewards.builtin import seen_completion, split_thinking
from .pickers import RunPicker, busy_ended, busy_message, checkpoint_choices, default_checkpoint, not_final_note, refuse
from .poller import Poller
from .run_view import reply_mark_list

PREFERENCES_FILE = "preferences.jsonl"
BASE_LABEL, TUNED_LABEL = "Base model", "Tuned model"
SAMPLED, GREEDY = "sampled", "greedy"
ONE_SAMPLE_NOTE = ("One reply is one sample: with sampling, the next one can differ, and even a better greedy reply on one "
                   "question is an anecdote. Whether the tuned model is better shows in the **Evaluate** tab, over many prompts "
                   "with intervals.")


# ---- the run's sampling ---------------------------------------------------------------------------

def trained_sampling(cfg) -> dict:
    """What run config `cfg` sampled its completions with in training: the effective temperature, top-p and top-k
    (RunConfig.rloo_value; `rloo.generation_kwargs` override them, as TRL applies them) and the completion length.
    top_k None: TRL's default, off. The chat applies the run's top-k itself (engine/chat_model.py); the rest become
    the controls' values."""
    from ..config import as_mapping

    override = as_mapping(cfg.rloo_value("generation_kwargs"))
    return {"temperature": float(override.get("temperature", cfg.rloo_value("temperature"))),
            "top_p": float(override.get("top_p", cfg.rloo_value("top_p"))),
            "top_k": override.get("top_k", cfg.rloo.get("top_k")),
            "max_new_tokens": int(override.get("max_new_tokens", cfg.rloo_value("max_completion_length")))}


def greedy(decoding: str, temperature: float) -> bool:
    """Whether a turn decodes greedily: chosen, or a temperature of 0, which the worker decodes greedily too
    (engine/chat_model.py: sampling needs a temperature above 0)."""
    return decoding == GREEDY or float(temperature) <= 0


def _settings(sampling: dict, greedy_now: bool = False) -> str:
    """The sampling settings in words, top-k and the token limit included ("temperature 1.0, top-p 1.0, top-k off,
    up to 24 new tokens"); greedy decoding uses only the token limit."""
    limit = f"up to {sampling['max_new_tokens']} new tokens"
    if greedy_now:
        return limit
    top_k = f"top-k {sampling['top_k']}" if sampling["top_k"] else "top-k off"
    return f"temperature {sampling['temperature']}, top-p {sampling['top_p']}, {top_k}, {limit}"


def sampling_line(run_id: str, trained: dict, temperature=None, top_p=None, max_new_tokens=None,
                  decoding: str = SAMPLED) -> str:
    """The line under the run picker: the sampling settings the next replies use (the controls' values, the run's top-k)
    and, where they are not the run's, what the run trained with. The controls' values default to the run's own."""
    now = {"temperature": float(trained["temperature"] if temperature is None else temperature),
           "top_p": float(trained["top_p"] if top_p is None else top_p), "top_k": trained["top_k"],
           "max_new_tokens": int(trained["max_new_tokens"] if max_new_tokens is None else max_new_tokens)}
    change = "Change them in Settings (top-k stays the run's)."
    if greedy(decoding, now["temperature"]):
        return (f"Greedy decoding now (the most likely token each time), {_settings(now, True)}; run `{run_id}` trained "
                f"sampling with {_settings(trained)}. {change}")
    names = (("temperature", "temperature {}"), ("top_p", "top-p {}"), ("max_new_tokens", "up to {} new tokens"))
    differ = ", ".join(words.format(trained[key]) for key, words in names if now[key] != trained[key])
    if not differ:
        return f"Sampling as run `{run_id}` trained: {_settings(now)}; change them in Settings (top-k stays the run's)."
    return f"Sampling now: {_settings(now)}; run `{run_id}` trained with {differ}. {change}"


# Upper ends of the sliders; a run that trained beyond them widens its slider (Sampling.check's own limits).
TEMPERATURE_MAX, MAX_TOKENS_MAX = 2.0, 4096


# ---- panes ----------------------------------------------------------------------------------------

def pane(conversation: list[dict], pending: str | None = None) -> list[dict]:
    """Chatbot messages for one side: thinking as a collapsed block, then the answer."""
    shown = []
    # A reply still streaming has not said whether its prompt opened the thought: its prompt has the template of the
    # side's last reply, so it is read as that one was (a first reply shows as written until it ends).
    opened = next((m.get("opened") for m in reversed(conversation) if m["role"] == "assistant"), False)
    turns = conversation + ([{"role": "assistant", "content": pending, "pending": True, "opened": opened}]
                            if pending is not None else [])
    for message in turns:
        if message["role"] == "user":
            shown.append({"role": "user", "content": message["content"]})
            continue
        # As the model continued it: after the prompt's <think> when a thinking template opened the thought.
        text = seen_completion(message["content"], bool(message.get("opened")))
        thinking, answer = split_thinking(text, streaming=True)
        if thinking is not None:
            still = message.get("pending") and not answer
            shown.append({"role": "assistant", "content": thinking or "(empty)",
                          "metadata": {"title": "Thinking", "status": "pending" if still else "done"}})
        if answer or thinking is None:
            shown.append({"role": "assistant", "content": _as_written(answer) or "…"})
        marks = [] if message.get("pending") else reply_mark_list(text, bool(message.get("cut_off")),
                                                                  message.get("max_new_tokens"))
        if marks:
            shown.append({"role": "assistant", "content": "⚠️ " + " · ".join(marks)})
    return shown


_ONLY_MARKERS = re.compile(r"\s*[-+*#>=_`]+\s*")


def _as_written(reply: str) -> str:
    """A reply that is nothing but Markdown's markers (`+`, `#`, `---`) is shown as those characters: rendered, it is
    an empty bullet or heading, which reads as no reply at all. Any other reply is rendered as the model wrote it."""
    return re.sub(r"([-+*#>=_`])", r"\\\1", reply) if _ONLY_MARKERS.fullmatch(reply or "") else reply


def said(message: dict) -> dict:
    """A reply as the model said it (role and content): what is sent back as the conversation, without the marks."""
    return {"role": message["role"], "content": message["content"]}


def reply_message(event: Reply) -> dict:
    """A reply event as the session keeps it: the text, whether it was cut off at which budget, and whether its prompt
    opened the thought (`opened`: the text starts inside it)."""
    return {"role": "assistant", "content": event.text, "cut_off": event.cut_off, "max_new_tokens": event.max_new_tokens,
            "opened": event.prompt_opens_think}


def new_session(blind: bool) -> dict:
    """Per-conversation state: each side's history, and in blind mode which side pane A shows."""
    return {"base": [], "tuned": [], "a_is": random.choice(["base", "tuned"]) if blind else "base", "blind": blind,
            "badges": {}, "voted": True, "last": None}


def layout(session: dict) -> tuple[str, str]:
    """(left side, right side): base | tuned, or the hidden blind order."""
    a = session["a_is"]
    return a, ("tuned" if a == "base" else "base")


def badge_markdown(session: dict, side: str, position: str) -> str:
    state = session["badges"].get(side)
    if session["blind"]:
        name = "Model A" if position == "left" else "Model B"
        check = " · adapter state checked ✓ (hidden until you vote)" if state and state.get("verified") else ""
        return f"**{name}**{check}"
    title = BASE_LABEL if side == "base" else TUNED_LABEL
    if not state:
        return f"**{title}**"
    mark = "✓" if state.get("verified") else "✗"
    return f"**{title}** — {mark} {state.get('badge')}"


class ChatTab:
    def __init__(self, runs_dir: Path, worker: InferenceWorker):
        self.runs_dir, self.worker = runs_dir, worker
        gr.Markdown("Ask both models the same thing. The **base** pane is the model before training, the **tuned** pane the "
                    "run's model: for a LoRA run, one model in memory with the adapter switched off and on. Both use the chat "
                    "template of training and the same sampling settings and seed. Each badge is checked while its reply is generated.")
        with gr.Row():
            self.picker = RunPicker(runs_dir, "chat", checkpoint_info="final = the weights saved when the run ended")
            self.run, self.checkpoint = self.picker.run, self.picker.checkpoint
            self.refresh = gr.Button("Refresh runs", elem_id="chat-refresh", scale=1)
        self.sampling_note = gr.Markdown(elem_id="chat-sampling-note")
        with gr.Accordion("Settings", open=False, elem_id="chat-settings"):
            self.system_prompt = gr.Textbox(label="System prompt", info="Filled with the run's system prompt (if any) when you pick a run.",
                                            elem_id="chat-system")
            with gr.Row():
                self.temperature = gr.Slider(0.0, TEMPERATURE_MAX, value=0.7, step=0.05, label="Temperature", info="0 = greedy (always the most likely token)",
                                             elem_id="chat-temperature")
                self.top_p = gr.Slider(0.05, 1.0, value=0.95, step=0.05, label="Top-p", elem_id="chat-top-p")
                self.max_tokens = gr.Slider(1, MAX_TOKENS_MAX, value=256, step=1, label="Max new tokens", elem_id="chat-max-tokens")
                self.seed = gr.Number(0, precision=0, label="Seed", info="Both sides use it; Retry moves to the next one", elem_id="chat-seed")
                self.decoding = gr.Radio([SAMPLED, GREEDY], value=SAMPLED, label="Decoding", elem_id="chat-decoding",
                                         info="sampled: with the temperature, top-p and seed below (Retry gives another "
                                              "reply); greedy: always the most likely token (those three unused; the same "
                                              "reply every time)")
            self.blind = gr.Checkbox(False, label="Blind mode: hide which side is which until I vote", elem_id="chat-blind")
        with gr.Row():
            with gr.Column():
                self.left_badge = gr.Markdown(f"**{BASE_LABEL}**", elem_id="chat-left-badge")
                self.left = gr.Chatbot(label="left", show_label=False, height=380, elem_id="chat-left")
            with gr.Column():
                self.right_badge = gr.Markdown(f"**{TUNED_LABEL}**", elem_id="chat-right-badge")
                self.right = gr.Chatbot(label="right", show_label=False, height=380, elem_id="chat-right")
        gr.Markdown(ONE_SAMPLE_NOTE, elem_id="chat-one-sample")
        with gr.Row():
            self.prompt = gr.Textbox(label="Message", placeholder="Ask both models…", scale=5, elem_id="chat-prompt", lines=2)
            with gr.Column(scale=1, min_width=120):
                self.send = gr.Button("Send", variant="primary", elem_id="chat-send")
                self.retry = gr.Button("Retry", elem_id="chat-retry")
                self.clear = gr.Button("Clear", elem_id="chat-clear")
        with gr.Row():
            self.vote_a = gr.Button("A is better", elem_id="vote-a", interactive=False, visible=False)
            self.vote_tie = gr.Button("Tie", elem_id="vote-tie", interactive=False, visible=False)
            self.vote_b = gr.Button("B is better", elem_id="vote-b", interactive=False, visible=False)
        self.status = gr.Markdown(elem_id="chat-status")
        self.session = gr.State(new_session(False))

    # ---- wiring ----------------------------------------------------------------------------------

    def wire(self, demo: gr.Blocks, poller: Poller | None = None) -> None:
        settings = [self.system_prompt, self.temperature, self.top_p, self.max_tokens, self.seed, self.decoding]
        panes = [self.left, self.right, self.left_badge, self.right_badge, self.status, self.session,
                 self.vote_a, self.vote_tie, self.vote_b]
        self.refresh.click(self.list_runs, inputs=[self.run, self.picker.chosen], outputs=[self.run, self.checkpoint], api_name="chat_runs")
        demo.load(self.list_runs, inputs=[self.run, self.picker.chosen], outputs=[self.run, self.checkpoint], api_visibility="private")
        self.picker.wire(demo, poller)
        note_inputs = [self.run, self.temperature, self.top_p, self.max_tokens, self.decoding]
        self.run.change(self.pick_run, inputs=[self.run, self.blind],
                        outputs=[self.checkpoint, self.system_prompt] + panes
                        + [self.temperature, self.top_p, self.max_tokens, self.sampling_note], api_name="chat_pick_run"
                        ).then(self.note_now, inputs=note_inputs, outputs=self.sampling_note, api_visibility="private")
        # The line says what the next replies use: one event for its four fields, whose last run reads them as they end up.
        gr.on([c.change for c in (self.temperature, self.top_p, self.max_tokens, self.decoding)], self.note_now,
              inputs=note_inputs, outputs=self.sampling_note, trigger_mode="always_last", api_visibility="private")
        self.checkpoint.change(self.reset, inputs=self.blind, outputs=panes, api_visibility="private")
        self.blind.change(self.reset, inputs=self.blind, outputs=panes, api_visibility="private")
        self.clear.click(self.reset, inputs=self.blind, outputs=panes, api_name="chat_clear")
        chat_inputs = [self.run, self.checkpoint, self.prompt, self.session] + settings
        # Send, Enter and Retry share one queue slot: two turns must not interleave on one conversation.
        one_turn = dict(concurrency_id="chat-turn", concurrency_limit=1)
        self.send.click(self.chat, inputs=chat_inputs, outputs=panes + [self.prompt], api_name="chat", **one_turn)
        self.prompt.submit(self.chat, inputs=chat_inputs, outputs=panes + [self.prompt], api_visibility="private", **one_turn)
        self.retry.click(self.retry_last, inputs=[self.run, self.checkpoint, self.session] + settings,
                         outputs=panes + [self.prompt, self.seed], api_name="chat_retry", **one_turn)
        for button, choice in ((self.vote_a, "a"), (self.vote_tie, "tie"), (self.vote_b, "b")):
            button.click(self._voter(choice), inputs=[self.run, self.checkpoint, self.session], outputs=panes,
                         api_name=f"chat_vote_{choice}")
        if poller is not None:  # "run X is training" goes once X stops: the refusal described a state that ended
            poller.tick(self.status_now, inputs=self.status, outputs=self.status)

    def status_now(self, status: str | None):
        return "" if busy_ended(status, self.runs_dir) else gr.skip()

    def _voter(self, choice: str):
        def handler(run_id, checkpoint, session):
            return self.vote(run_id, checkpoint, session, choice)
        return handler

    # ---- handlers --------------------------------------------------------------------------------

    def list_runs(self, current: str | None, chosen: dict | None = None):
        choices, run, ckpts, ckpt = self.picker.resolve(current, chosen)
        return gr.update(choices=choices, value=run), gr.update(choices=ckpts, value=ckpt)

    def pick_run(self, run_id: str | None, blind: bool):
        """The run's checkpoints and system prompt, fresh panes, and the sampling controls set to the run's own values
        (kept as they are, with the reason, when its config cannot be read)."""
        folder = runs.run_folder(self.runs_dir, run_id)  # a name that climbs out of the runs folder is no run
        ckpts = checkpoint_choices(folder) if folder else []
        system, controls = "", [gr.update()] * 3
        cfg, trained, note = self._run_sampling(run_id)
        if trained:
            system = cfg.data.system_prompt or ""
            controls = [gr.update(value=trained["temperature"], maximum=max(TEMPERATURE_MAX, trained["temperature"])),
                        gr.update(value=trained["top_p"]),
                        gr.update(value=trained["max_new_tokens"], maximum=max(MAX_TOKENS_MAX, trained["max_new_tokens"]))]
            note = sampling_line(run_id, trained)
        return [gr.update(choices=ckpts, value=default_checkpoint(ckpts)), system] + self.reset(blind) + controls + [note]

    def note_now(self, run_id: str | None, temperature, top_p, max_tokens, decoding=SAMPLED) -> str:
        """The sampling line for the settings as they are now: every change in Settings rewrites it, so it never says
        the run's values while others are used."""
        _, trained, note = self._run_sampling(run_id)
        return sampling_line(run_id, trained, temperature, top_p, max_tokens, decoding) if trained else note

    def _run_sampling(self, run_id: str | None) -> tuple:
        """(config, trained_sampling, "") of a run, or (None, None, why not) when its config cannot be read ("" for
        no run)."""
        folder = runs.run_folder(self.runs_dir, run_id)
        if not folder:
            return None, None, ""
        try:
            from ..config import RunConfig

            cfg = RunConfig.load(folder / runs.CONFIG_FILE)
            return cfg, trained_sampling(cfg), ""
        except (StudioError, OSError, ValueError, TypeError) as exc:
            why = exc.what if isinstance(exc, StudioError) else f"{type(exc).__name__}: {exc}"
            return None, None, (f"Run `{run_id}`'s config could not be read ({why}), so the sampling settings are not the "
                                "run's: set them in Settings.")

    def render(self, session: dict, status: str = "", pending: dict | None = None, voting: bool = False) -> list:
        left_side, right_side = layout(session)
        pending = pending or {}
        show_votes = session["blind"] and voting
        vote = gr.update(interactive=show_votes, visible=session["blind"])  # the vote buttons exist only in blind mode
        return [pane(session[left_side], pending.get(left_side)), pane(session[right_side], pending.get(right_side)),
                badge_markdown(session, left_side, "left"), badge_markdown(session, right_side, "right"), status, session,
                vote, vote, vote]

    def reset(self, blind: bool) -> list:
        return self.render(new_session(bool(blind)), "Blind mode: the panes are called A and B, shuffled for every message (each is a fresh one-turn chat); vote after each." if blind else "")

    def chat(self, run_id, checkpoint, message, session, system_prompt, temperature, top_p, max_tokens, seed, decoding=SAMPLED):
        message = (message or "").strip()
        if not message:
            yield self.render(session, refuse("Type a message first.")) + [gr.update()]
            return
        yield from self._turn(run_id, checkpoint, message, session, system_prompt, temperature, top_p, max_tokens, seed, decoding)

    def retry_last(self, run_id, checkpoint, session, system_prompt, temperature, top_p, max_tokens, seed, decoding=SAMPLED):
        last = session.get("last")
        problem = (self._problem(run_id, checkpoint) or
                   ("Nothing to retry yet: send a message first." if not last else None) or
                   ("Vote for the last turn first (A, Tie or B): it keeps the tally honest." if session["blind"] and not session.get("voted", True) else None))
        if problem:  # checked before the last exchange is taken back, so a refusal loses nothing
            yield self.render(session, refuse(problem), voting=session["blind"] and not session.get("voted", True)) + [gr.update(), gr.update()]
            return
        for side in ("base", "tuned"):  # drop the last exchange on both sides, then ask again with the next seed
            while session[side] and session[side][-1]["role"] == "assistant":
                session[side].pop()
            if session[side] and session[side][-1]["role"] == "user":
                session[side].pop()
        new_seed = int(seed or 0) + 1
        for out in self._turn(run_id, checkpoint, last, session, system_prompt, temperature, top_p, max_tokens, new_seed, decoding):
            yield out + [new_seed]

    def _problem(self, run_id, checkpoint) -> str | None:
        if not run_id or not checkpoint:
            return "Pick a run and a checkpoint first (a run appears here once it has saved its weights)."
        folder = runs.run_folder(self.runs_dir, run_id)
        if folder is None or not (folder / runs.CONFIG_FILE).is_file():
            return f"Run `{run_id}` is no longer in {self.runs_dir}: press Refresh runs."
        return busy_message(self.runs_dir, "The chat")

    def _turn(self, run_id, checkpoint, message, session, system_prompt, temperature, top_p, max_tokens, seed, decoding=SAMPLED):
        problem = self._problem(run_id, checkpoint)
        if problem:
            yield self.render(session, refuse(problem)) + [gr.update()]
            return
        if session["blind"] and not session.get("voted", True):
            yield self.render(session, refuse("Vote for the last turn first (A, Tie or B): it keeps the tally honest."), voting=True) + [gr.update()]
            return
        if session["blind"] or session.get("plain"):
            # Each blind turn is a fresh one-turn conversation, shuffled anew: a revealed order
            # or a side's earlier answers must not give the next vote away. A run trained on plain-text
            # prompts gets each message alone (no conversation): the panes show it alone too.
            session = {**new_session(session["blind"]), "plain": session.get("plain", False)}
        for side in ("base", "tuned"):
            session[side].append({"role": "user", "content": message})
        session["last"] = message
        session["badges"] = {}
        sampling = {"temperature": float(temperature), "top_p": float(top_p), "max_new_tokens": int(max_tokens), "seed": int(seed or 0),
                    "greedy": decoding == GREEDY}
        # The conversation so far is the same user turns on both sides but each side's own answers.
        before = {side: len(session[side]) - 1 for side in ("base", "tuned")}  # without this turn's question
        blind = session["blind"]
        # Blind mode generates in pane order and shows nothing until both are done: which pane
        # fills first must not tell which model it is.
        order = layout(session) if blind else ("base", "tuned")
        pending = {}
        yield self.render(session, "Loading the model…" if self.worker.loaded is None else "Generating…", pending) + [""]
        try:
            events = self.worker.chat(runs.run_folder(self.runs_dir, run_id), checkpoint, {side: [said(m) for m in session[side]] for side in order}, sampling,
                                      system_prompt=system_prompt or None, sides=order,
                                      guard=lambda: busy_message(self.runs_dir, "The chat"))
            replies = {}
            for event in events:
                if isinstance(event, Progress):
                    yield self.render(session, f"{event.message}…", pending) + [gr.update()]
                elif isinstance(event, TextDelta) and not blind:
                    pending[event.side] = pending.get(event.side, "") + event.delta
                    yield self.render(session, f"Generating the {event.side} reply…", pending) + [gr.update()]
                elif isinstance(event, Reply):
                    replies[event.side] = event
                    pending.pop(event.side, None)
                    if not blind:
                        session["badges"][event.side] = event.adapter_state
                        session[event.side].append(reply_message(event))
                        yield self.render(session, "", pending) + [gr.update()]
                    else:
                        yield self.render(session, f"Generated {len(replies)} of 2 replies…") + [gr.update()]
            if blind:
                for side, event in replies.items():
                    session["badges"][side] = event.adapter_state
                    session[side].append(reply_message(event))
        except (StudioError, OSError) as exc:
            for side in ("base", "tuned"):  # the turn did not complete: take all of it back on both sides
                del session[side][before[side]:]
            text = exc.message() if isinstance(exc, StudioError) else f"{type(exc).__name__}: {exc}"
            yield self.render(session, refuse(f"**Could not generate:** {text}".replace("\n", "  \n"))) + [message]
            return
        session["voted"] = not session["blind"]
        limit = f"up to {sampling['max_new_tokens']} new tokens"
        if greedy(decoding, sampling["temperature"]):
            note = f"Both replies use greedy decoding (the most likely token each time), {limit}: Retry gives the same replies."
        else:
            note = (f"Both replies use seed {sampling['seed']}, temperature {sampling['temperature']}, top-p {sampling['top_p']}, "
                    f"{limit}: one sample each; Retry draws another.")
        not_final = not_final_note(runs.run_folder(self.runs_dir, run_id), checkpoint)
        note += f" The tuned side is {not_final}." if not_final else ""
        if any(r.plain_prompt for r in replies.values()):
            session["plain"] = True
            note += (" This run's prompts are plain text, not a chat: each message goes to both models alone, without "
                     "the earlier turns, as its training prompts did, so the panes show one turn at a time.")
        yield self.render(session, note + (" Which is better?" if session["blind"] else ""), voting=True) + [gr.update()]

    def vote(self, run_id, checkpoint, session, choice: str) -> list:
        folder = runs.run_folder(self.runs_dir, run_id)
        if not session.get("blind") or session.get("voted", True) or not session.get("last") or folder is None:
            return self.render(session, "Votes are for blind mode, once per turn.")
        a_is = session["a_is"]
        b_is = "tuned" if a_is == "base" else "base"
        preferred = {"a": a_is, "b": b_is, "tie": "tie"}[choice]
        record = {"time": time.time(), "run": run_id, "checkpoint": checkpoint, "prompt": session["last"], "a_is": a_is,
                  "choice": choice, "preferred": preferred,
                  "replies": {side: session[side][-1]["content"] for side in ("base", "tuned") if session[side]}}
        runs.append_jsonl(folder / PREFERENCES_FILE, record)
        session["voted"] = True
        # The votes for these weights only: "tuned" is another model at each checkpoint.
        tally = {"tuned": 0, "base": 0, "tie": 0}
        for r in runs.read_jsonl(folder / PREFERENCES_FILE):
            if r.get("preferred") in tally and r.get("checkpoint") == checkpoint:
                tally[r["preferred"]] += 1
        return self.render(session, f"Recorded. **A was the {a_is} model, B the {b_is} model.** Blind votes so far with "
                                    f"the tuned side at {checkpoint}: tuned {tally['tuned']}, base {tally['base']}, tie "
                                    f"{tally['tie']} (all votes are saved in {PREFERENCES_FILE}).")
