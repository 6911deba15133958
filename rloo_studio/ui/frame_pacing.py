"""Frame pacing for the page: an animation-frame loop that has run for over a second is slowed to a few frames a second.

Why: Gradio's loading indicator starts a `requestAnimationFrame` loop (its elapsed-time counter) while the page loads
and never ends it once the page has loaded: the indicator is removed, its loop goes on, and the browser draws 60
frames a second for as long as the page is open — about a tenth of a CPU core with nothing happening on the page
(benchmarks/page_idle_cpu.py), taken from a training run on a CPU machine. The app's own components animate nothing
for long; the only long loops are such elapsed-time counters, which read as well at 4 frames a second.

`FramePacing` is ASGI middleware (`answer_rewrite.AnswerRewrite`) that puts `SCRIPT` at the top of the page's `<head>`, before Gradio's modules load
(they keep their own reference to `requestAnimationFrame` from then on; a script added later would come too late).
The script wraps `requestAnimationFrame`: a callback requested from inside an animation-frame callback continues that
one's chain; after `FULL_RATE_FRAMES` frames in a chain, its next frames are requested `SLOW_FRAME_MS` apart.
Everything else on the page — other requests, other routes — passes through untouched.
"""

from __future__ import annotations

from .answer_rewrite import AnswerRewrite

FULL_RATE_FRAMES = 60  # about a second at 60 frames a second: transitions and short animations keep their full rate
SLOW_FRAME_MS = 250

SCRIPT = f"""<script>(() => {{
  const request = window.requestAnimationFrame.bind(window), cancel = window.cancelAnimationFrame.bind(window);
  const delayed = new Map();  // id handed out -> [timeout, frame request] for a slowed frame
  let chain = 0, nextId = -1;  // chain: length of the chain whose callback runs now (0 outside frame callbacks)
  window.requestAnimationFrame = (callback) => {{
    const depth = chain + 1;
    const run = (time) => {{ const outer = chain; chain = depth; try {{ callback(time); }} finally {{ chain = outer; }} }};
    if (depth <= {FULL_RATE_FRAMES}) return request(run);
    const id = nextId--;
    delayed.set(id, [setTimeout(() => {{ delayed.get(id)[1] = request((t) => {{ delayed.delete(id); run(t); }}); }}, {SLOW_FRAME_MS}), null]);
    return id;
  }};
  window.cancelAnimationFrame = (id) => {{
    const slowed = delayed.get(id);
    if (!slowed) return cancel(id);
    clearTimeout(slowed[0]);
    if (slowed[1] !== null) cancel(slowed[1]);
    delayed.delete(id);
  }};
}})();</script>"""


class FramePacing(AnswerRewrite):
    """ASGI middleware: `SCRIPT` goes first in the `<head>` of every HTML page answered to a GET."""

    def wants_answer(self, headers: dict) -> bool:
        return headers.get(b"content-type", b"").startswith(b"text/html")

    def rewrite(self, body: bytes) -> bytes:
        return body.replace(b"<head>", b"<head>" + SCRIPT.encode("utf-8"), 1)
