"""An indexed component lookup for Gradio's page: the page's cost per event, cut by about half.

Why: Gradio's page (its `core` module) keeps a loading status for every component an event has ever written, and at
each status change of any event (about three per event, each poll tick included) it updates every one of them, each
first looked up by a walk of the page's whole component tree. With this app's ~420 components and ~200 written ones,
those walks were most of the browser's work. Measured side by side on a 2-core CPU machine (benchmarks/page_event_cpu.py,
page_idle_cpu.py, page_training_cpu.py): per tab change 0.53 s of the page's main thread, 0.23 s with the index; idle,
9 % of a core, 6 % with it; following a training run, 61 %, 36 % with it. On a CPU machine that is time a training run
does not get. (In the browser test of a person's own CSV, the renderer used 312 CPU-seconds, 166 with the index.)

`ComponentLookup` is ASGI middleware (`answer_rewrite.AnswerRewrite`) that replaces the lookup function in the `core`
asset Gradio serves (`GRADIO_LOOKUP`, as Gradio 6.31's build writes it) with `INDEXED_LOOKUP`: the same function
(same name, same arguments, same answer) that keeps an index of the tree, id -> (node, parent), made by one walk, and
uses an entry only after checking that the node still hangs from the root through its recorded parents, each still
listing it among its children; any other case (a node replaced, moved or removed, a new root, an id not indexed) walks
the tree again. So it answers what the walk answers whenever the tree's ids are unique, which Gradio's are. A Gradio
whose asset does not hold `GRADIO_LOOKUP` word for word is served unchanged (one warning in the app's log): the page
works as Gradio wrote it, at Gradio's cost. tests/browser/test_component_lookup.py checks both functions agree on trees
changed in every such way; tests/ui/test_launch.py that the installed Gradio's asset gets the index.
"""

from __future__ import annotations

import logging
import re

from .answer_rewrite import AnswerRewrite

log = logging.getLogger(__name__)

# Gradio's lookup, in its `core-<hash>.js` asset: the first node with id `t` in a depth-first walk from `e`.
GRADIO_LOOKUP = ("function Z(e,t){if(e.id===t)return e;if(e.children)for(let n of e.children){let e=Z(n,t);if(e)return e}"
                 "return null}")
# The same function with an index, one declaration as Gradio's was (its index is a property of the function: the
# asset's top-level names are Gradio's).
INDEXED_LOOKUP = """function Z(root,id){
  function fill(node,parent,index){if(!index.has(node.id))index.set(node.id,[node,parent]);
    if(node.children)for(const child of node.children)fill(child,node,index)}
  function hangs(node,index){for(;;){if(node===root)return true;const entry=index.get(node.id),parent=entry&&entry[1];
    if(!entry||entry[0]!==node||!parent||!parent.children||!parent.children.includes(node))return false;node=parent}}
  const indexes=Z.indexes||(Z.indexes=new WeakMap);
  let index=indexes.get(root),entry=index&&index.get(id);
  if(entry&&hangs(entry[0],index))return entry[0];
  index=new Map;fill(root,null,index);indexes.set(root,index);
  entry=index.get(id);return entry?entry[0]:null}"""

CORE_ASSET = re.compile(r"/assets/core-[A-Za-z0-9_-]+\.js$")


class ComponentLookup(AnswerRewrite):
    """ASGI middleware: Gradio's `core` asset is served with `INDEXED_LOOKUP` in place of `GRADIO_LOOKUP`."""

    warned = False

    def wants(self, scope) -> bool:
        return super().wants(scope) and bool(CORE_ASSET.search(scope.get("path", "")))

    def wants_answer(self, headers: dict) -> bool:
        return b"javascript" in headers.get(b"content-type", b"")

    def rewrite(self, body: bytes) -> bytes:
        if GRADIO_LOOKUP.encode() in body:
            return body.replace(GRADIO_LOOKUP.encode(), INDEXED_LOOKUP.encode(), 1)
        if not ComponentLookup.warned:
            ComponentLookup.warned = True
            log.warning("this Gradio's page looks its components up in a way component_lookup.py does not know: it is "
                        "served unchanged (it works; each event costs the browser more CPU)")
        return body
