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


# --- the rig's boundary ---------------------------------------------------------------
# Procedures, front doors and integrations speak to a rig only through Rig's typed
# operations and CaptureRun (docs/architecture.md): none of them holds the link.

#: The room that owns the link.
RIG_ROOM = "rtrig.host.rig"
#: The link's module.
LINK_MODULE = "rtrig.host.rig.link"
#: Attributes named ``link`` outside ``host/rig/`` that are no RigLink, each with why:
#: (module, the expression as written) → reason. Strict: an entry no longer found must
#: go, so the list cannot hide a new access.
ALLOWED_LINK_ATTRS = {
    ("rtrig.host.cli.capture", "res.link"):
        "CaptureResult.link: the loss counters of the public result (a dict)",
    ("rtrig.host.cli.suite", "res.link"):
        "SuiteResult.link: the loss counters of the public result (a dict)",
    ("rtrig.host.procedures.sweep", "res.link"):
        "a step's CaptureResult.link: the loss counters it records (a dict)",
    ("rtrig.host.procedures.suite.run", "self.link"):
        "SuiteResult.to_json: the result's own loss counters (a dict)",
    ("rtrig.host.sim.simrig", "self.link"):
        "SimRig.link: the twin's kind of link, 'fast' or 'line' (a string)",
}
#: Names that may be imported from the link's module outside ``host/rig/``, with why
#: (none: the loss counters' table lives in ``host/rig/loss.py``, the decoders in
#: ``host/rig/decode.py``).
ALLOWED_LINK_IMPORTS = {}


def _boundary_crossings(module, tree, is_pkg=False):
    """``(line, what, allowed key or None)`` for each place ``module`` reaches past
    ``Rig``: an attribute named ``link`` (also by ``getattr``), an import of the link's
    module or of ``RigLink``, a use of the name ``RigLink``."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr == "link":
            text = ast.unparse(node)
            out.append((node.lineno, text, (module, text)))
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
              and node.func.id in ("getattr", "setattr", "hasattr") and len(node.args) > 1
              and isinstance(node.args[1], ast.Constant) and node.args[1].value == "link"):
            out.append((node.lineno, ast.unparse(node), None))
        elif isinstance(node, ast.Name) and node.id == "RigLink":
            out.append((node.lineno, "RigLink", None))
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name == LINK_MODULE or a.name.startswith(LINK_MODULE + "."):
                    out.append((node.lineno, f"import {a.name}", None))
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(module, is_pkg, node.level, node.module)
            for a in node.names:
                if a.name == "RigLink" or f"{base}.{a.name}" == LINK_MODULE:
                    out.append((node.lineno, f"import {a.name} from {base}", None))
                elif base == LINK_MODULE:
                    out.append((node.lineno, f"import {a.name} from {base}",
                                a.name if a.name in ALLOWED_LINK_IMPORTS else None))
    return out


def _outside_rig():
    return sorted(m for m in MODULES if _layer(m) == "host"
                  and m != RIG_ROOM and not m.startswith(RIG_ROOM + "."))


def test_a_boundary_crossing_is_found():
    src = ("from ..rig.link import RigLink, decode_events, LINK_COUNTERS\n"
           "from ..rig import link\n"
           "import rtrig.host.rig.link\n"
           "def f(rig):\n"
           "    rig.link.read1(0)\n"
           "    return getattr(rig, 'link')\n")
    found = _boundary_crossings("rtrig.host.procedures.x", ast.parse(src))
    assert sorted((line, str(allowed)) for line, _, allowed in found) == [
        (1, "None"), (1, "None"), (1, "None"), (2, "None"), (3, "None"),
        (5, "('rtrig.host.procedures.x', 'rig.link')"), (6, "None")]
    assert "rtrig.host.procedures.measure" in _outside_rig()
    assert "rtrig.host.rig.rig" not in _outside_rig()


def test_only_the_rig_room_holds_the_link():
    bad, used = [], set()
    for m in _outside_rig():
        path, is_pkg = MODULES[m]
        tree = ast.parse(path.read_text(), str(path))
        for line, what, key in _boundary_crossings(m, tree, is_pkg):
            if key in ALLOWED_LINK_ATTRS or key in ALLOWED_LINK_IMPORTS:
                used.add(key)
            else:
                bad.append(f"{path.relative_to(ROOT)}:{line}: {what}")
    stale = (ALLOWED_LINK_ATTRS.keys() | ALLOWED_LINK_IMPORTS.keys()) - used
    assert not bad, (f"{len(bad)} accesses past Rig (use or add a Rig operation): "
                     + "; ".join(sorted(bad)))
    assert not stale, f"allowed but no longer found, drop them: {sorted(map(str, stale))}"


#: The longest a function of the gateware or the host may be, in lines (an
#: ``elaborate`` of hundreds of lines is a sign to compose components).
MAX_FUNCTION_LINES = 100


def _long_functions(limit):
    out = {}
    for m in MODULES:
        if _layer(m) not in ("gateware", "host"):
            continue
        path = MODULES[m][0]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) \
                    and node.end_lineno - node.lineno + 1 > limit:
                out[f"{m}.{node.name}"] = node.end_lineno - node.lineno + 1
    return out


def test_long_functions_are_found():
    # the check would pass vacuously if it measured nothing
    assert any(n.startswith("rtrig.gateware.") for n in _long_functions(40))
    assert any(n.startswith("rtrig.host.") for n in _long_functions(40))


def test_no_long_function_in_gateware_or_host():
    long = _long_functions(MAX_FUNCTION_LINES)
    assert not long, f"functions over {MAX_FUNCTION_LINES} lines, split them: {long}"


def _shared_test_basenames(paths):
    """Test module basenames that occur in more than one folder: pytest's default
    import mode loads such a pair as one module and refuses the second file."""
    seen = {}
    for p in paths:
        seen.setdefault(p.name, []).append(p)
    return {name: ps for name, ps in seen.items() if len(ps) > 1}


def test_a_shared_test_basename_is_found():
    assert _shared_test_basenames([Path("a/test_x.py"), Path("b/test_x.py")])


def test_no_two_test_modules_share_a_basename():
    shared = _shared_test_basenames(sorted((ROOT / "tests").rglob("test_*.py")))
    assert not shared, f"rename one of each pair, pytest collects them as one: {shared}"
