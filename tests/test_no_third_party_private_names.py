"""sigform touches no private name of a third-party package: any release may change those.

Every module of ``sigform/`` is read with ``ast``. A name bound by importing a third-party module
or something from one (``import httpx``, ``from aiohttp import ClientSession as S``, in a
function too) may not be followed by an attribute starting with ``_`` (``httpx._client``,
``S._base_url``), looked up with ``getattr(name, "_...")`` either; nor may an import name a
private module or object (``from openai._models import ...``, ``from x import _y``). Dunder names
(``__version__``, ``__dict__``) are public protocol, not private.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import sigform

PACKAGE = Path(sigform.__file__).parent
STDLIB = frozenset(sys.stdlib_module_names) | {"__future__"}


def _third_party(module: str | None, level: int = 0) -> bool:
    if level or not module:
        return False
    top = module.split(".")[0]
    return top != "sigform" and top not in STDLIB


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def violations(source: str, where: str) -> list[str]:
    tree = ast.parse(source)
    bound: set[str] = set()
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if _third_party(alias.name):
                    if any(_private(part) for part in alias.name.split(".")):
                        found.append(f"{where}:{node.lineno} import {alias.name}")
                    bound.add(alias.asname or alias.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom) and _third_party(node.module, node.level):
            assert node.module is not None
            if any(_private(part) for part in node.module.split(".")):
                found.append(f"{where}:{node.lineno} from {node.module} import ...")
            for alias in node.names:
                if _private(alias.name):
                    found.append(f"{where}:{node.lineno} from {node.module} import {alias.name}")
                bound.add(alias.asname or alias.name)
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _private(node.attr):
            base = node.value
            while isinstance(base, ast.Attribute):  # httpx.Client._transport: the chain's root
                base = base.value
            if isinstance(base, ast.Name) and base.id in bound:
                found.append(f"{where}:{node.lineno} {ast.unparse(node)}")
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("getattr", "hasattr", "setattr")
            and len(node.args) >= 2
            and isinstance(node.args[0], ast.Name)
            and node.args[0].id in bound
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
            and _private(node.args[1].value)
        ):
            found.append(f"{where}:{node.lineno} {ast.unparse(node)}")
    return found


def test_no_module_touches_a_third_party_private_name() -> None:
    found = [
        hit
        for path in sorted(PACKAGE.rglob("*.py"))
        for hit in violations(path.read_text(encoding="utf-8"), str(path.relative_to(PACKAGE.parent)))
    ]
    assert found == []


def test_the_check_sees_each_kind_of_private_access() -> None:
    source = '''
import httpx
import openai as oa
from aiohttp import ClientSession as S
from openai._models import FinalRequestOptions
from litellm import _private_helper

def f(client):
    import yarl
    httpx.Client._transport
    oa._exceptions
    S._base_url
    yarl.URL._val
    getattr(httpx, "_client")
    client._build_request  # not a name bound by an import: unknown, not flagged
    httpx.__version__  # dunder: public
    httpx.Client.send  # public
'''
    hits = violations(source, "m.py")
    assert [hit.split(" ", 1)[1] for hit in hits] == [
        "from openai._models import ...",
        "from litellm import _private_helper",
        "httpx.Client._transport",
        "oa._exceptions",
        "S._base_url",
        "yarl.URL._val",
        "getattr(httpx, '_client')",
    ]



# private names of the standard library that sigform reads on purpose (os._exit after fork, ...)
STDLIB_PRIVATE = frozenset({"_exit", "_getframe", "_eval_type", "_parse_cache"})


def _setter(node: ast.Call) -> bool:
    """``setattr(x, ...)`` or ``object.__setattr__(x, ...)``."""
    func = node.func
    return (isinstance(func, ast.Name) and func.id == "setattr") or (
        isinstance(func, ast.Attribute) and func.attr == "__setattr__"
    )


def _getter(node: ast.Call) -> bool:
    return isinstance(node.func, ast.Name) and node.func.id in ("getattr", "hasattr")


def private_reads(sources: dict[str, str]) -> list[str]:
    """Private attributes read (``x._y``, ``getattr(x, "_y")``) that sigform never defines (by a
    def, a class, an assignment, ``__slots__`` or ``setattr``): the import check above does not
    follow an object a library returned (``response._hidden_params``) or a library class that
    sigform subclasses (``self._directory`` in a ``diskcache.Disk``)."""
    defined: set[str] = set()
    reads: list[tuple[str, int, str]] = []
    for where, source in sources.items():
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                defined.add(node.name)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                defined.add(node.id)
            elif isinstance(node, ast.Attribute) and _private(node.attr):
                if isinstance(node.ctx, ast.Store):
                    defined.add(node.attr)
                else:
                    reads.append((where, node.lineno, node.attr))
            elif isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "__slots__" for t in node.targets
            ):
                defined.update(c.value for c in ast.walk(node.value) if isinstance(c, ast.Constant))
            elif isinstance(node, ast.Call) and len(node.args) >= 2:
                name = node.args[1]
                if not (isinstance(name, ast.Constant) and isinstance(name.value, str)):
                    continue
                if _setter(node):
                    defined.add(name.value)
                elif _getter(node) and _private(name.value):
                    reads.append((where, node.lineno, name.value))
    return [f"{w}:{line} {name}" for w, line, name in reads if name not in defined | STDLIB_PRIVATE]


def test_every_private_name_read_is_defined_in_sigform() -> None:
    sources = {
        str(path.relative_to(PACKAGE.parent)): path.read_text(encoding="utf-8")
        for path in sorted(PACKAGE.rglob("*.py"))
    }
    assert private_reads(sources) == []


def test_the_second_check_sees_a_library_object_and_a_library_base_class() -> None:
    source = '''
import diskcache

class SafeDisk(diskcache.Disk):
    __slots__ = ("_kept",)

    def __init__(self):
        self._mine = 1
        object.__setattr__(self, "_set", 2)

    def root(self, response):
        self._mine, self._kept, self._set, getattr(self, "_set")  # sigform's own: fine
        response._hidden_params
        getattr(response, "_cost", None)
        return self._directory
'''
    hits = private_reads({"m.py": source})
    assert sorted(hit.split(" ", 1)[1] for hit in hits) == ["_cost", "_directory", "_hidden_params"]
