"""The page's indexed component lookup (ui/component_lookup.py) answers what Gradio's walk answers, on trees changed in
every way its index must notice: a node replaced by another with its id, moved, removed, added, given a new id (the
root too), a children list replaced, a new root, ids never in the tree. Both functions run in Chromium, on the same
trees, step by step; and the index answers most lookups (a lookup that always walked would agree too)."""

from __future__ import annotations

from helpers.browser import BROWSER_MARKS, CHROMIUM, CHROMIUM_ARGS

from rloo_studio.ui.component_lookup import GRADIO_LOOKUP, INDEXED_LOOKUP

pytestmark = BROWSER_MARKS

# A random tree of `size` nodes, then `steps` random changes; after each, both lookups of every id (and some never
# used) from the root and from a random node. Returns the disagreements (none expected), the lookups, and how many of
# them made a new index (the others were answered from the index, or were misses answered by the walk).
COMPARE_JS = """([size, steps, seed]) => {
  let state = seed;
  const random = (n) => { state = (state * 1103515245 + 12345) % 2147483648; return state % n; };
  let nextId = 0;
  const make = () => ({id: nextId++, props: {}, children: []});
  let root = make();
  const all = () => { const found = []; const walk = (n) => { found.push(n); (n.children || []).forEach(walk); }; walk(root); return found; };
  for (let i = 1; i < size; i++) { const nodes = all(); nodes[random(nodes.length)].children.push(make()); }
  const inside = (node, other) => node === other || (node.children || []).some((c) => inside(c, other));
  const changes = {
    replace: () => { const nodes = all().filter((n) => n !== root); if (!nodes.length) return;
      const node = nodes[random(nodes.length)], parent = all().find((p) => (p.children || []).includes(node));
      parent.children[parent.children.indexOf(node)] = {...node, props: {}}; },
    move: () => { const nodes = all().filter((n) => n !== root); if (!nodes.length) return;
      const node = nodes[random(nodes.length)], parent = all().find((p) => (p.children || []).includes(node));
      const targets = all().filter((t) => !inside(node, t)); const target = targets[random(targets.length)];
      parent.children.splice(parent.children.indexOf(node), 1); target.children.push(node); },
    remove: () => { const nodes = all().filter((n) => n !== root); if (!nodes.length) return;
      const node = nodes[random(nodes.length)], parent = all().find((p) => (p.children || []).includes(node));
      parent.children = parent.children.filter((c) => c !== node); },
    add: () => { const nodes = all(); nodes[random(nodes.length)].children.push(make()); },
    renumber: () => { const nodes = all(); nodes[random(nodes.length)].id = nextId++; },
    newChildren: () => { const nodes = all(); const node = nodes[random(nodes.length)]; node.children = [...node.children]; },
    newRoot: () => { root = {...root}; },
    nothing: () => {},
  };
  const names = Object.keys(changes);
  let disagreements = [], checked = 0, made = 0;
  for (let step = 0; step < steps; step++) {
    const change = names[random(names.length)];
    changes[change]();
    const nodes = all(), from = [root, nodes[random(nodes.length)]];
    // The ids no longer in the tree first (a renumbered root answers to its old id only from a stale entry), then the
    // others (a new index made for one would hide a stale entry of the next).
    const present = nodes.map((n) => n.id), ids = [];
    for (let id = -2; id < nextId + 2; id++) if (!present.includes(id)) ids.push(id);
    ids.push(...present);
    for (const start of from) {
      for (const id of ids) {
        checked++;
        const before = Z.indexes && Z.indexes.get(start);
        const want = GradioZ(start, id), got = Z(start, id);
        if (Z.indexes.get(start) !== before) made++;
        if (want !== got) disagreements.push(`step ${step} (${change}), id ${id}: ${want && want.id} vs ${got && got.id}`);
      }
    }
  }
  return {disagreements: disagreements.slice(0, 5), count: disagreements.length, checked, made};
}"""


def test_the_indexed_lookup_answers_what_gradios_walk_answers():
    from playwright.sync_api import sync_playwright

    gradio = GRADIO_LOOKUP.replace("Z(", "GradioZ(")
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            page.add_script_tag(content=gradio + "\n" + INDEXED_LOOKUP)
            for seed in (1, 2, 3):
                result = page.evaluate(COMPARE_JS, [60, 300, seed])
                assert result["count"] == 0 and result["checked"] > 10_000, result
                assert result["made"] < result["checked"] / 20, f"the index was made anew for {result['made']} lookups"
        finally:
            browser.close()
