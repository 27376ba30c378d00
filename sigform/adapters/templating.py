"""Prompt wording lives in jinja2 templates, one folder per adapter, overridable by users.

Each adapter reads its templates by name (``system``, ``user``, ``assistant``, ``demo_note``,
``reask``, ...) from ``sigform/adapters/templates/<adapter>/<name>.jinja``. Users replace any of
them with ``ChatAdapter(templates={"system": "..."})`` (template source strings) or
``ChatAdapter(template_dir="my_templates/")`` (a folder holding ``<name>.jinja`` files); names
not overridden keep the built-in wording. Rendering is deterministic: same context, same text.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jinja2

__all__ = ["TEMPLATE_ROOT", "TemplateSet"]

TEMPLATE_ROOT = Path(__file__).resolve().parent / "templates"


def _environment(loader: jinja2.BaseLoader) -> jinja2.Environment:
    env = jinja2.Environment(
        loader=loader,
        autoescape=False,  # prompts are plain text; values are neutralised before rendering
        undefined=jinja2.StrictUndefined,  # a typo in a user template fails loudly
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=False,
    )
    from sigform.adapters.wording import FILTERS

    env.filters.update(FILTERS)
    return env


class TemplateSet:
    """The templates of one adapter: built-ins, a user folder over them, string overrides on top."""

    def __init__(
        self,
        folder: str,
        templates: Mapping[str, str] | None = None,
        template_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        self._args = (folder, dict(templates) if templates else None, template_dir)
        loaders: list[jinja2.BaseLoader] = []
        if templates:
            bad = [k for k, v in templates.items() if not isinstance(v, str)]
            if bad:
                raise TypeError(f"template overrides must be strings of jinja2 source; bad: {bad}")
            _check_names(folder, templates)
            loaders.append(jinja2.DictLoader({f"{k}.jinja": v for k, v in templates.items()}))
        if template_dir is not None:
            path = Path(template_dir)
            if not path.is_dir():
                raise FileNotFoundError(f"template_dir {str(path)!r} is not a folder")
            loaders.append(jinja2.FileSystemLoader(str(path)))
        loaders.append(jinja2.FileSystemLoader(str(TEMPLATE_ROOT / folder)))
        loaders.append(jinja2.FileSystemLoader(str(TEMPLATE_ROOT / "common")))
        self.folder = folder
        self.overridden = bool(templates) or template_dir is not None
        self._env = _environment(jinja2.ChoiceLoader(loaders))
        self._compiled: dict[str, jinja2.Template] = {}
        self._lock = threading.Lock()

    def __reduce__(self) -> tuple[Any, ...]:
        # rebuilt from its arguments elsewhere (the jinja environment and lock stay here)
        return (TemplateSet, self._args)

    def identity(self) -> dict[str, object]:
        """The wording as JSON data: the adapter's folder, the string overrides, and a digest of
        each template in the user folder (an edited file is another wording)."""
        folder, overrides, template_dir = self._args
        files = None
        if template_dir is not None:
            found = sorted(Path(template_dir).glob("*.jinja"))
            files = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in found}
        return {"folder": folder, "overrides": overrides, "template_dir": files}

    def get(self, name: str) -> jinja2.Template:
        """The compiled template ``name`` (compiled once, then cached)."""
        template = self._compiled.get(name)
        if template is None:
            with self._lock:
                template = self._env.get_template(f"{name}.jinja")
                self._compiled[name] = template
        return template

    def render(self, name: str, **context: object) -> str:
        """Render template ``name``; surrounding blank space is trimmed."""
        return self.get(name).render(**context).strip()

    def source(self, name: str) -> str:
        """The source text of template ``name`` as it would be used (to read or copy and edit)."""
        loader = self._env.loader
        assert loader is not None
        return loader.get_source(self._env, f"{name}.jinja")[0]


def _check_names(folder: str, templates: Mapping[str, str]) -> None:
    """A name that is no built-in template and that no override uses is a typo: it would
    silently change nothing (``{"sytem": ...}``). Helpers included by an override are fine."""
    known = {p.stem for d in (TEMPLATE_ROOT / folder, TEMPLATE_ROOT / "common") for p in d.glob("*.jinja")}
    unknown = [
        name
        for name in templates
        if name not in known and not any(f"{name}.jinja" in src for src in templates.values())
    ]
    if unknown:
        raise ValueError(
            f"template override(s) {unknown} match no template of this adapter; known names: "
            f"{sorted(known)} (a helper template must be used by another override)"
        )
