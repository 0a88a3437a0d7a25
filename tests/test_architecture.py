# SPDX-License-Identifier: BSD-2-Clause
"""The layers of docs/architecture.md hold: no import circle between modules, and no
layer imports one above it; only the rig room holds the link; no function, and no
product file without a stated reason, grows too long; every cited document exists.

Imports are read from the source (every ``import``, also those inside functions, as
each is a dependency all the same), with the ``rtrig.*`` names of pyproject.toml's
package-dir mapping.
"""

import ast
import re
import subprocess
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
    ("rtrig.host.procedures.sweep_steps", "res.link"):
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


#: Lines a C function of firmware/ may take (the target's code, the Linux module and
#: program included).
MAX_C_FUNCTION_LINES = 60


def _long_c_functions(limit, files=None):
    """{"file:function": lines} of the C functions in firmware/ over ``limit`` lines,
    measured by lizard (its C parser: declarations, macros and bodies as written)."""
    import lizard
    if files is None:
        files = [p for p in sorted((ROOT / "firmware").rglob("*.[ch]"))
                 if "build" not in p.relative_to(ROOT).parts]
    out = {}
    for path in files:
        for fn in lizard.analyze_file(str(path)).function_list:
            n = fn.end_line - fn.start_line + 1
            if n > limit:
                out[f"{Path(path).relative_to(ROOT)}:{fn.name}"] = n
    return out


def test_long_c_functions_are_found():
    # the check would pass vacuously if it parsed nothing
    long = _long_c_functions(20)
    assert any(k.startswith("firmware/kernel/") for k in long), long
    assert any(k.startswith("firmware/linux/") for k in long), long


def test_no_long_c_function_in_firmware():
    long = _long_c_functions(MAX_C_FUNCTION_LINES)
    assert not long, f"C functions over {MAX_C_FUNCTION_LINES} lines, split them: {long}"


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


# --- file length ----------------------------------------------------------------------
# A product file holds one idea; past ~400 lines it usually holds several.

#: The longest a product file may be, in lines.
MAX_FILE_LINES = 400
#: The product files' folders and the kinds of file measured in each.
PRODUCT_FILES = {"gateware": (".py",), "host": (".py",), "rig/boards": (".py",),
                 "rtrig": (".py",), "firmware": (".c", ".h")}
#: Files allowed past the limit, each with why. Strict: a file back under the limit
#: must leave the list.
LONG_FILES = {
    "firmware/apps/suite/main.c":
        "the kernel suite: its tests, their table and the TRACE framing the host decodes",
    "firmware/kernel/sched.c":
        "threads, ready queue, ticks and timeouts share the scheduler's private state",
    "firmware/linux/app/rtrig_app.c":
        "the Linux target program: one static file, built against libc alone",
    "firmware/linux/agent/rtrig_agent.c":
        "the VM test bed's guest agent: one static file, built against libc alone",
    "firmware/linux/vgpio/rtrig_vgpio.c":
        "an out-of-tree kernel module of one source file (Kbuild obj-m)",
    "firmware/linux/module/rtrig_linux.c":
        "an out-of-tree kernel module of one source file (Kbuild obj-m)",
    "firmware/tests/kernel_tests.c":
        "the kernel's unit tests: one list, run by the host runner and the selftest program",
    "gateware/stat_accumulators.py":
        "ChannelStats and HeartbeatWindows share the statistics' register layout",
    "gateware/model.py":
        "the model CPU: one state machine, mirrored cycle for cycle by host/model",
    "gateware/link.py":
        "the link's three stages (PacketRx, CommandUnit, PacketTx) and their packet types",
    "host/report/data.py":
        "the report's numbers: histogram, exceedance, envelope and persistence of a capture",
    "rig/boards/build.py":
        "one board build: synthesis, the timing check and the build cache",
}


def _tracked():
    out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True,
                         text=True, check=True).stdout
    return [p for p in out.split("\0") if p]


def _long_files(paths, limit):
    """{path: lines} of the product files among ``paths`` (relative to ``ROOT``) over
    ``limit`` lines."""
    out = {}
    for p in paths:
        folder = next((f for f in PRODUCT_FILES if p.startswith(f + "/")), None)
        if folder is None or not p.endswith(PRODUCT_FILES[folder]) or not (ROOT / p).is_file():
            continue
        n = len((ROOT / p).read_text(errors="replace").splitlines())
        if n > limit:
            out[p] = n
    return out


def test_a_long_file_is_found():
    found = _long_files(["host/rig/rig.py", "host/sim/harness.cpp", "tests/conftest.py",
                         "firmware/kernel/sched.c", "docs/architecture.md"], 50)
    assert set(found) == {"host/rig/rig.py", "firmware/kernel/sched.c"}, found


def test_no_long_file_without_a_reason():
    long = _long_files(_tracked(), MAX_FILE_LINES)
    unlisted = {p: n for p, n in long.items() if p not in LONG_FILES}
    stale = sorted(set(LONG_FILES) - set(long))
    assert not unlisted, (f"files over {MAX_FILE_LINES} lines: split them along their "
                          f"ideas, or name them in LONG_FILES with why: {unlisted}")
    assert not stale, f"no longer over {MAX_FILE_LINES} lines, drop them from LONG_FILES: {stale}"


# --- package faces ---------------------------------------------------------------------
# A package's __init__.py hands names on: its docstring, imports, ``__all__`` and
# ``__version__``, no logic (the logic lives in a module a reader can find by name).

#: Names a package __init__ may assign.
_FACE_NAMES = {"__all__", "__version__"}


def _face_logic(text):
    """The line numbers of the statements of an ``__init__.py``'s ``text`` that are
    not its docstring, an import or an assignment of :data:`_FACE_NAMES`."""
    bad = []
    for i, node in enumerate(ast.parse(text).body):
        if i == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            continue
        if isinstance(node, ast.Assign) and all(
                isinstance(t, ast.Name) and t.id in _FACE_NAMES for t in node.targets):
            continue
        bad.append(node.lineno)
    return bad


def test_logic_in_a_package_face_is_found():
    assert _face_logic('"""doc"""\nfrom .a import b\n__all__ = ["b"]\n') == []
    assert _face_logic('"""doc"""\nimport x\nBOARDS = x.collect()\ndef f():\n    pass\n') \
        == [3, 4]


def test_package_inits_hold_no_logic():
    bad = {p: lines for p in _tracked() if p.endswith("/__init__.py")
           and any(p.startswith(f + "/") for f in PRODUCT_FILES)
           for lines in [_face_logic((ROOT / p).read_text())] if lines}
    assert not bad, f"move the logic of these package __init__s into a module: {bad}"


# --- references -----------------------------------------------------------------------
# Every document the code or the docs cite is a file of the repository
# (tests/test_docs.py refuses the names of design notes kept outside it).

#: A cited page in source: ``docs/ci.md``, ``boards.md``, ``README.md``.
_MD_NAME = re.compile(r"[A-Za-z0-9_./-]*[A-Za-z0-9_-]\.md\b")
#: A link of a Markdown page: ``[text](target)``, not a URL or an anchor of the page.
_MD_LINK = re.compile(r"\]\(([^)\s#]+)(?:#[^)]*)?\)")


def _dangling(path, text):
    """The documents ``path`` (relative to ``ROOT``) cites that are not in the
    repository: a Markdown page's relative links, a source file's ``*.md`` names (from
    the root, from docs/ or from the file's folder)."""
    here = (ROOT / path).parent
    if path.endswith(".md"):
        targets = [t for t in _MD_LINK.findall(text) if "://" not in t
                   and not t.startswith("mailto:")]
        return sorted({t for t in targets
                       if not (here / t).exists() or ROOT not in (here / t).resolve().parents})
    names = set(_MD_NAME.findall(text))
    return sorted(n for n in names if not any(
        (base / n).is_file() and ROOT in (base / n).resolve().parents
        for base in (ROOT, ROOT / "docs", here)))


_CITING = (".py", ".c", ".h", ".cpp", ".S", ".ld", ".md", ".toml", "Makefile")


def test_a_dangling_reference_is_found():
    # (the missing page's name is put together, so tests/test_docs.py does not see it)
    gone = "docs" + "/nowhere.md"
    assert _dangling("host/x.py", f"see docs/ci.md, boards.md and {gone}") == [gone]
    page = "docs" + "/x.md"
    assert _dangling(page, "[a](ci.md) [b](../../notes/plan.md) [c](gone.md#x) "
                     "[d](https://example.org/e.md) [e](#top)") == \
        ["../../notes/plan.md", "gone.md"]


def test_every_cited_document_is_in_the_repository():
    bad = {p: d for p in _tracked() if p.endswith(_CITING) and (ROOT / p).is_file()
           and p != "tests/test_architecture.py"
           for d in [_dangling(p, (ROOT / p).read_text(errors="replace"))] if d}
    assert not bad, f"references to documents not in the repository: {bad}"


def _listed_packages():
    import tomllib
    return set(tomllib.loads((ROOT / "pyproject.toml").read_text())
               ["tool"]["setuptools"]["packages"])


def _package_folders():
    """Every package under the mapped folders, by its import name."""
    out = set()
    for name, folder in PACKAGES.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT / folder).parts
            out.add(".".join((name, *rel)))
    return out


def test_every_package_is_installed():
    # a package missing from pyproject.toml's list is left out of a wheel: the
    # editable install the tests run on would not show it
    missing = _package_folders() - _listed_packages()
    assert not missing, f"add to [tool.setuptools] packages in pyproject.toml: {missing}"
    assert "rtrig.host.sim" in _package_folders()
