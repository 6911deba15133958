"""The page's loading-status updates (ui/status_updates.py) leave every component with the status Gradio's own method
leaves it with, while sending only the statuses that changed. Both methods run in Chromium on the same random
sequence of what Gradio's page does: events changing some statuses (Gradio makes a new object of every other one at
each change, with the same values), statuses written to components directly (a validation message cleared as an event
starts, a status set to null as one ends), new components, and a new update callback (Gradio's reload)."""

from __future__ import annotations

from helpers.browser import BROWSER_MARKS, CHROMIUM, CHROMIUM_ARGS

from rloo_studio.ui.status_updates import CHANGED_ONLY, GRADIO_UPDATE

pytestmark = BROWSER_MARKS

COMPARE_JS = """async ([steps, seed]) => {
  let state = seed;
  const random = (n) => { state = (state * 1103515245 + 12345) % 2147483648; return state % n; };
  const make = (Kind) => { const m = new Kind(); m.shown = new Map(); m.calls = 0; m.loading_stati = {current: {}};
    m.update_state_cb = async (id, props) => { m.calls++; if ('loading_status' in props) m.shown.set(String(id), props.loading_status); };
    return m; };
  const gradio = make(GradioManager), patched = make(PatchedManager);
  const both = (f) => { f(gradio); f(patched); };
  let components = 5, disagreements = [];
  const stages = ['pending', 'generating', 'complete', 'error'];
  for (let step = 0; step < steps; step++) {
    const what = random(10);
    if (what < 6) {  // an event's status changes: its outputs get new values, every other entry a copy
      const outputs = [random(components), random(components)], status = stages[random(stages.length)], eta = random(3);
      for (const m of [gradio, patched]) {
        const current = m.loading_stati.current;
        for (const id of Object.keys(current)) current[id] = {...current[id], used_cache: null};
        for (const id of outputs) current[id] = {status, eta, queue_position: null, component_id: id, used_cache: null};
      }
    } else if (what < 8) {  // a direct write: a validation message cleared, or a status set to null
      const id = random(components), value = random(2) ? {validation_error: null} : {status: null};
      for (const m of [gradio, patched]) await m.update_state_cb(id, {loading_status: {...value}});
    } else if (what < 9) {
      components++;
    } else {  // Gradio's reload hands the manager a new callback
      for (const m of [gradio, patched]) { const shown = m.shown;
        m.update_state_cb = async (id, props) => { m.calls++; if ('loading_status' in props) shown.set(String(id), props.loading_status); }; }
    }
    await gradio.update_loading_stati_state();
    await patched.update_loading_stati_state();
    for (let id = 0; id < components; id++) {
      const want = JSON.stringify(gradio.shown.get(String(id))), got = JSON.stringify(patched.shown.get(String(id)));
      if (want !== got) disagreements.push(`step ${step} (${what}), component ${id}: ${want} vs ${got}`);
    }
  }
  return {disagreements: disagreements.slice(0, 5), count: disagreements.length, gradio: gradio.calls, patched: patched.calls};
}"""


def test_only_changed_statuses_are_sent_and_every_component_shows_what_gradio_would_show():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            page.add_script_tag(content=f"window.GradioManager = class {{ {GRADIO_UPDATE} }};\n"
                                        f"window.PatchedManager = class {{ {CHANGED_ONLY} }};")
            for seed in (1, 2, 3):
                result = page.evaluate(COMPARE_JS, [400, seed])
                assert result["count"] == 0, result
                # Most of what Gradio sends is the status the component already has.
                assert result["patched"] < result["gradio"] / 3, result
        finally:
            browser.close()
