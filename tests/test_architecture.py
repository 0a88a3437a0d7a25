# SPDX-License-Identifier: BSD-2-Clause
"""The layers of docs/architecture.md hold: no import circle between modules, and no
layer imports one above it.

Imports are read from the source (every ``import``, also those inside functions, as
each is a dependency all the same), with the ``rtrig.*`` names of pyproject.toml's
package-dir mapping.
"""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: Import name → folder, as pyproject.toml maps them.
PACKAGES = {"rtrig.gateware": "gateware", "rtrig.host": "host", "rtrig.boards": "rig/boards",
            "rtrig": "rtrig"}
#: Each layer and the layers below it that it may import. The floor (``rtrig``'s own
#: modules: protocol, records, capture files, errors, units) imports nothing above.
LAYERS = {
    "floor": set(),
    "gateware": {"floor"},
    "boards": {"gateware", "floor"},
    "host": {"boards", "gateware", "floor"},
}
#: Entry points above every layer: they only hand over to the host.
ENTRY = {"rtrig.__main__"}


def _modules():
    """{module name: (path, is package)} of every project module."""
    out = {}
    for pkg, folder in PACKAGES.items():
        base = ROOT / folder
        for path in base.rglob("*.py"):
            rel = path.relative_to(base).with_suffix("")
            parts = list(rel.parts)
            if pkg == "rtrig" and parts and parts[0] in ("gateware", "host", "boards"):
                continue
            is_pkg = parts[-1] == "__init__"
            if is_pkg:
                parts = parts[:-1]
            name = ".".join([pkg, *parts]) if parts else pkg
            out.setdefault(name, (path, is_pkg))
    return out


MODULES = _modules()


def _resolve(module, is_pkg, level, name):
    if level == 0:
        return name
    base = module.split(".")
    if not is_pkg:
        base = base[:-1]
    base = base[:len(base) - (level - 1)]
    return ".".join(base + ([name] if name else []))


def _imports(module):
    """The project modules ``module`` imports."""
    path, is_pkg = MODULES[module]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(module, is_pkg, node.level, node.module)
            # "from package import submodule" depends on the submodule itself
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base
                       for a in node.names]
        else:
            continue
        for t in targets:
            while t and t not in MODULES:
                t = t.rpartition(".")[0]
            if t and t != module:
                found.add(t)
    return found


GRAPH = {m: _imports(m) for m in MODULES}


def _layer(module):
    for pkg, layer in (("rtrig.gateware", "gateware"), ("rtrig.boards", "boards"),
                       ("rtrig.host", "host")):
        if module == pkg or module.startswith(pkg + "."):
            return layer
    return "floor"


def _circles(graph):
    """The strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_the_module_map_is_read():
    # the test would pass vacuously if it found no modules or no imports
    assert {"rtrig.capture", "rtrig.host.rig.rig", "rtrig.gateware.top",
            "rtrig.boards.build"} <= MODULES.keys()
    assert "rtrig.protocol" in GRAPH["rtrig.host.rig.rig"]
    assert "rtrig.host.cli.options" in GRAPH["rtrig.host.cli.capture"]


def test_a_circle_is_found():
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


#: Circles known and not yet broken, each with why. Strict: once one is gone its entry
#: must go too, and a new circle fails the test.
KNOWN_CIRCLES = set()


def test_no_import_circle():
    circles = {tuple(c) for c in _circles(GRAPH)}
    assert circles == KNOWN_CIRCLES, (
        "new import circles: " + "; ".join(" ↔ ".join(c) for c in circles - KNOWN_CIRCLES)
        + " / circles gone, drop them from KNOWN_CIRCLES: "
        + "; ".join(" ↔ ".join(c) for c in KNOWN_CIRCLES - circles))


@pytest.mark.parametrize("layer", list(LAYERS))
def test_no_layer_imports_upward(layer):
    allowed = LAYERS[layer] | {layer}
    bad = sorted(f"{m} → {t}" for m in GRAPH if _layer(m) == layer and m not in ENTRY
                 for t in GRAPH[m] if _layer(t) not in allowed)
    assert not bad, f"{layer} imports from above: " + ", ".join(bad)
