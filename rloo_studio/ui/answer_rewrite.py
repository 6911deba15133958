"""Rewriting some of the app's answers on their way out: the ASGI middleware base of the page's fixes to Gradio's
frontend (`frame_pacing.py`; `component_lookup.py` and `status_updates.py`, each an `AssetPatch`).

A subclass says which answers it wants (`wants`: the request; `wants_answer`: the answer's headers) and what to make of
a wanted answer's whole body (`rewrite`); the body is held until it is all there, rewritten, and sent with its new
length. Every other request and answer passes through untouched. Gradio compresses answers outside this middleware
(app.launch), so a wanted answer arrives here as text; a compressed one, and any answer but a 200, is passed through
as it is.
"""

from __future__ import annotations

import logging
import re

log = logging.getLogger(__name__)

DROPPED_HEADERS = {b"content-length", b"etag", b"last-modified", b"accept-ranges", b"cache-control"}


class AnswerRewrite:
    """ASGI middleware: `rewrite(body)` replaces the body of each answer that `wants(scope)` and `wants_answer(headers)`."""

    def __init__(self, app):
        self.app = app

    def wants(self, scope) -> bool:
        """Whether the answer to this request may be rewritten (only GETs are)."""
        return scope["type"] == "http" and scope.get("method") == "GET"

    def wants_answer(self, headers: dict) -> bool:
        raise NotImplementedError

    def rewrite(self, body: bytes) -> bytes:
        raise NotImplementedError

    async def __call__(self, scope, receive, send):
        if not self.wants(scope):
            await self.app(scope, receive, send)
            return
        # The answer as body messages: no file handed to the server to send by itself (a byte range of it, a 206, is not
        # rewritten: see below).
        scope = {**scope, "extensions": {k: v for k, v in (scope.get("extensions") or {}).items() if k != "http.response.pathsend"}}
        start: dict | None = None
        body: list[bytes] = []

        async def send_rewritten(message):
            nonlocal start
            if message["type"] == "http.response.start":
                headers = dict(message.get("headers", []))
                # (A 304 has no body to rewrite; a 206 is part of one.)
                if message.get("status") != 200 or b"content-encoding" in headers or not self.wants_answer(headers):
                    await send(message)
                    return
                start = message  # held until the whole body is here: its length changes
                return
            if start is None or message["type"] != "http.response.body":
                await send(message)
                return
            body.append(message.get("body", b""))
            if message.get("more_body", False):
                return
            new = self.rewrite(b"".join(body))
            # The file's validators describe the file, not what is sent: a browser that kept an answer must ask again.
            headers = [(k, v) for k, v in start.get("headers", []) if k.lower() not in DROPPED_HEADERS]
            await send({**start, "headers": [*headers, (b"content-length", str(len(new)).encode()),
                                             (b"cache-control", b"no-cache")]})
            await send({"type": "http.response.body", "body": new})

        await self.app(scope, receive, send_rewritten)


class AssetPatch(AnswerRewrite):
    """One function of one of Gradio's page assets, replaced as the asset is served: the asset whose path (under the
    app's root) matches `asset` has `gradio`, word for word as the installed Gradio's build writes it, replaced with
    `patched`. An asset that does not hold `gradio` (another Gradio) is served unchanged, with one warning in the app's
    log (`what`: what the page then costs): the page works as Gradio wrote it."""

    asset: re.Pattern
    gradio: str
    patched: str
    gradio_does: str  # what the replaced function does, in the warning's words
    what: str
    warned = False

    def wants(self, scope) -> bool:
        path = scope.get("path", "")
        root = scope.get("root_path", "")
        return super().wants(scope) and bool(self.asset.fullmatch(path[len(root):] if root and path.startswith(root) else path))

    def wants_answer(self, headers: dict) -> bool:
        return b"javascript" in headers.get(b"content-type", b"")

    def rewrite(self, body: bytes) -> bytes:
        if self.gradio.encode() in body:
            return body.replace(self.gradio.encode(), self.patched.encode(), 1)
        if not type(self).warned:
            type(self).warned = True
            log.warning("this Gradio's page %s in a way %s does not know: it is served unchanged (it works; %s)",
                        self.gradio_does, type(self).__module__.rsplit(".", 1)[-1] + ".py", self.what)
        return body

