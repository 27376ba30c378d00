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
