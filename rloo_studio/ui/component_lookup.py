"""An indexed component lookup for Gradio's page: the browser's CPU per event, cut by about half.

Why: Gradio's page (its `core` module) keeps a loading status for every component an event has ever written, and at
each status change of any event (about three per event, each poll tick included) it updates every one of them, each
first looked up by walking the page's component tree until it is found. With this app's ~420 components and ~200
written ones, those walks were most of the browser's work. Measured side by side on a 2-core CPU machine, one run of
each, Chromium's CPU (benchmarks/page_event_cpu.py, page_idle_cpu.py, page_training_cpu.py): ten tab changes 1.5 s
apart 6.1 s, 3.1 s with the index; idle, 11 % of a core, 8 % with it; following a training run, 70 %, 43 % with it. On a
CPU machine that is time a training run does not get (and the browser tests' time: in one run of the test of a
person's own CSV, the renderer used 312 CPU-seconds, 166 with the index).

`ComponentLookup` is ASGI middleware (`answer_rewrite.AssetPatch`) that replaces the lookup function in the `core`
asset Gradio serves (`GRADIO_LOOKUP`, as Gradio 6.31's build writes it) with `INDEXED_LOOKUP`: the same function
(same name, same arguments, same answer) that keeps an index of the tree, id -> (node, parent), made by one walk, and
uses an entry only after checking that its node still has that id and hangs from the root through its recorded parents,
each still listing it among its children; in any other case (a node replaced, moved, removed or renumbered, a new root,
an id not indexed) Gradio's walk answers, and the index is made anew when the walk finds the node. So it answers what
the walk answers whenever the tree's ids are unique, which Gradio's are. A Gradio
whose asset does not hold `GRADIO_LOOKUP` word for word is served unchanged (one warning in the app's log): the page
works as Gradio wrote it, at Gradio's cost. tests/browser/test_component_lookup.py checks both functions agree on trees
changed in every such way; tests/ui/test_launch.py that the installed Gradio's asset gets the index.
"""

from __future__ import annotations

import re

from .answer_rewrite import AssetPatch

# Gradio's lookup, in its `core-<hash>.js` asset: the first node with id `t` in a depth-first walk from `e`.
GRADIO_LOOKUP = ("function Z(e,t){if(e.id===t)return e;if(e.children)for(let n of e.children){let e=Z(n,t);if(e)return e}"
                 "return null}")
# The same function with an index, one declaration as Gradio's was (its index is a property of the function: the
# asset's top-level names are Gradio's). An entry is used only if its node still has that id and hangs from the root;
# otherwise Gradio's walk answers, and the index is made anew when the walk finds the node (not on every miss: an id
# that is not in the tree would cost a whole new index each time).
INDEXED_LOOKUP = """function Z(root,id){
  function walk(node){if(node.id===id)return node;if(node.children)for(const child of node.children){const found=walk(child);if(found)return found}return null}
  function fill(node,parent,index){if(!index.has(node.id))index.set(node.id,[node,parent]);
    if(node.children)for(const child of node.children)fill(child,node,index)}
  function hangs(node,index){for(;;){if(node===root)return true;const entry=index.get(node.id),parent=entry&&entry[1];
    if(!entry||entry[0]!==node||!parent||!parent.children||!parent.children.includes(node))return false;node=parent}}
  const indexes=Z.indexes||(Z.indexes=new WeakMap);
  const index=indexes.get(root),entry=index&&index.get(id);
  if(entry&&entry[0].id===id&&hangs(entry[0],index))return entry[0];
  const found=walk(root);
  if(found){const made=new Map;fill(root,null,made);indexes.set(root,made)}
  return found}"""

CORE_ASSET = re.compile(r"/assets/core-[A-Za-z0-9_-]+\.js")  # the path under the app's root


class ComponentLookup(AssetPatch):
    """ASGI middleware: Gradio's `core` asset is served with `INDEXED_LOOKUP` in place of `GRADIO_LOOKUP`."""

    asset, gradio, patched = CORE_ASSET, GRADIO_LOOKUP, INDEXED_LOOKUP
    gradio_does = "looks its components up"
    what = "each event costs the browser more CPU"
