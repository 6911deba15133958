"""Loading statuses sent to the page's components only when they changed: the browser's CPU per event, cut again.

Why: at every status change of any event (about three per event, each poll tick included) Gradio's page (its `Blocks`
module) hands the loading status of every component an event has ever written — ~200 in this app — to its state
update, which first reads and copies each component's whole state (its value included: a table's rows) before it
sets the status. Nearly all of those statuses are the ones the component already has. Measured side by side on a
2-core CPU machine, one run of each (benchmarks/page_event_cpu.py): over ten tab changes 1.5 s apart, the renderer
was busy 2.52 s with `component_lookup.py`'s index alone and 1.08 s with this too (9.18 s with neither); Chromium's
CPU, all its processes, 3.39 s and 1.91 s (10.59 s).

`StatusUpdates` is ASGI middleware (`answer_rewrite.AssetPatch`) that serves Gradio's `Blocks` asset with
`CHANGED_ONLY` in place of `GRADIO_UPDATE` (as Gradio 6.31's build writes it): the same method, which sends a
component's status only when it differs, key by key, from the last status this page's event manager sent it. Gradio
also writes statuses to components directly (clearing a validation message as an event starts, a status left
`null` as one ends): every status write goes through the manager's `update_state_cb`, which the method wraps (once per
callback it is given) to
forget what it sent a component whenever anything else is written to that component's status — the next update then
sends it, as Gradio's method always did. tests/browser/test_status_updates.py runs the method in Chromium;
tests/ui/test_launch.py checks the installed Gradio's asset is served with it.
"""

from __future__ import annotations

import re

from .answer_rewrite import AssetPatch

# Gradio's method of its event manager (the class that dispatches the page's events), in its `Blocks-<hash>.js` asset.
GRADIO_UPDATE = ("async update_loading_stati_state(){await Promise.all(Object.entries(this.loading_stati.current)"
                 ".map(([e,t])=>this.update_state_cb(Number(e),{loading_status:t},!1)))}")
# The same method, sending only the statuses that changed. `sent`: component id -> the status object last sent to it;
# a status write of any other object to a component (through `update_state_cb`, wrapped once) forgets its entry. The
# map belongs to the wrapper: a manager given a new `update_state_cb` (Gradio's reload of the page's config) starts anew.
CHANGED_ONLY = """async update_loading_stati_state(){
  if(!this.update_state_cb.__sent){const sent=new Map,update=this.update_state_cb;
    const wrapped=(id,props,...rest)=>{if(props&&"loading_status" in props&&sent.get(String(id))!==props.loading_status)sent.delete(String(id));return update(id,props,...rest)};
    wrapped.__sent=sent;this.update_state_cb=wrapped}
  const sent=this.update_state_cb.__sent;
  const same=(a,b)=>{const keys=Object.keys(a);return keys.length===Object.keys(b).length&&keys.every(k=>a[k]===b[k])};
  const changed=Object.entries(this.loading_stati.current).filter(([id,status])=>{const was=sent.get(id);
    if(was&&same(status,was))return false;sent.set(id,status);return true});
  await Promise.all(changed.map(([id,status])=>this.update_state_cb(Number(id),{loading_status:status},!1)))}"""

BLOCKS_ASSET = re.compile(r"/assets/Blocks-[A-Za-z0-9_-]+\.js")  # the path under the app's root


class StatusUpdates(AssetPatch):
    """ASGI middleware: Gradio's `Blocks` asset is served with `CHANGED_ONLY` in place of `GRADIO_UPDATE`."""

    asset, gradio, patched = BLOCKS_ASSET, GRADIO_UPDATE, CHANGED_ONLY
    gradio_does = "updates its components' loading statuses"
    what = "each event costs the browser more CPU"
