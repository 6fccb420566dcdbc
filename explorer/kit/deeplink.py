"""Page state <-> URL query parameters, so a lecturer can share a link to one exact moment.

A page declares a :class:`LinkSchema` (field name -> kind and default). ``encode`` turns state into
string query parameters, leaving out defaults; ``decode`` reads parameters back, keeping the default
(and reporting why) for any value that does not parse. Nothing is evaluated: numbers go through
``float``/``int``/``json.loads`` and are checked to be finite numbers or nested lists of them.

Input values travel as one parameter, ``name=value`` pairs joined by ``;`` where a value is a JSON
number or nested list: ``x1=3;x2=0.5;W=[[1,2],[3,4]]``.
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any, Mapping

KINDS = ("str", "int", "float", "bool", "values", "list")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
MAX_PARAM_CHARS = 4000  # a URL longer than this is not a link anyone shares
MAX_NESTING = 6         # brackets inside one input value (the inputs box allows as many)
# ASCII only: int() and float() also read full-width or Arabic-Indic digits ("１２" is 12), which no one
# types into a link on purpose
_INT = re.compile(r"[+-]?[0-9]+", re.ASCII)
_FLOAT = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|[+-]?(?:inf|infinity|nan)",
                    re.ASCII | re.IGNORECASE)


class DeepLinkError(ValueError):
    """A query parameter that cannot be read as the page expects."""


@dataclass(frozen=True)
class LinkField:
    kind: str
    default: Any = None
    choices: tuple | None = None     # allowed values (str / list items)
    minimum: float | None = None
    maximum: float | None = None

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"unknown link field kind {self.kind!r}; known: {KINDS}")


def _check_number_tree(v: Any, where: str) -> Any:
    if isinstance(v, bool):
        raise DeepLinkError(f"{where}: expected a number, got {json.dumps(v)}")
    if isinstance(v, (int, float)):
        if not math.isfinite(float(v)):
            raise DeepLinkError(f"{where}: not a finite number")
        return float(v)
    if isinstance(v, list) and v:
        items = [_check_number_tree(x, where) for x in v]
        kinds = {isinstance(x, list) for x in items}
        if len(kinds) > 1:
            raise DeepLinkError(f"{where}: mixes numbers and lists")
        if isinstance(items[0], list) and len({len(x) for x in items}) > 1:
            raise DeepLinkError(f"{where}: rows of different lengths")
        return items
    raise DeepLinkError(f"{where}: expected a number or a non-empty list of numbers")


def encode_values(values: Mapping[str, Any]) -> str:
    """``{"x1": 3.0, "W": [[1, 2]]}`` -> ``"x1=3;W=[[1,2]]"`` (numbers written shortest-exact)."""
    parts = []
    for name, value in values.items():
        if not _NAME.match(name):
            raise DeepLinkError(f"input name {name!r} is not an identifier")
        tree = _check_number_tree(_to_tree(value), name)
        parts.append(f"{name}={_dump(tree)}")
    return ";".join(parts)


def _to_tree(value: Any) -> Any:
    tolist = getattr(value, "tolist", None)
    return tolist() if callable(tolist) else value


def _dump(tree: Any) -> str:
    if isinstance(tree, list):
        return "[" + ",".join(_dump(x) for x in tree) + "]"
    f = float(tree)
    return str(int(f)) if f.is_integer() and abs(f) < 1e15 else repr(f)


def decode_values(text: str) -> dict[str, Any]:
    """Inverse of :func:`encode_values`. Raises DeepLinkError naming the bad pair."""
    out: dict[str, Any] = {}
    if not text.strip():
        return out
    for pair in text.split(";"):
        if not pair.strip():
            continue
        name, sep, raw = pair.partition("=")
        name = name.strip()
        if not sep:
            raise DeepLinkError(f"{pair!r}: expected name=value")
        if not _NAME.match(name):
            raise DeepLinkError(f"{name!r} is not an input name")
        depth = deepest = 0
        for ch in raw:  # before json.loads, which recurses once per bracket (RecursionError at ~1000)
            depth += ch == "["
            depth -= ch == "]"
            deepest = max(deepest, depth)
        if deepest > MAX_NESTING:
            raise DeepLinkError(f"{name}: lists nested more than {MAX_NESTING} deep")
        try:
            tree = json.loads(raw)
        except (ValueError, RecursionError):
            raise DeepLinkError(f"{name}: {raw[:40]!r} is not a number or list of numbers") from None
        out[name] = _check_number_tree(tree, name)
    return out


@dataclass(frozen=True)
class LinkSchema:
    """The fields of one page's deep link."""
    fields: dict[str, LinkField] = field(default_factory=dict)

    def defaults(self) -> dict[str, Any]:
        return {k: f.default for k, f in self.fields.items()}

    def encode(self, state: Mapping[str, Any]) -> dict[str, str]:
        """State -> query parameters; fields equal to their default are left out."""
        params: dict[str, str] = {}
        for key, f in self.fields.items():
            if key not in state:
                continue
            value = state[key]
            if value == f.default or value is None:
                continue
            params[key] = self._encode_one(f, value)
        return params

    def readable(self, params: Mapping[str, str]) -> tuple[dict[str, str], list[str]]:
        """The parameters a link's reader accepts (:meth:`decode` reads each back without a problem), and the
        names of those it would refuse: a link carries only what it can give back (a 1 MB program was written
        into the URL, 1.47 MB, while a parameter over :data:`MAX_PARAM_CHARS` is refused when read)."""
        kept: dict[str, str] = {}
        dropped: list[str] = []
        for key, raw in params.items():
            if key in self.fields and self.decode({key: raw}, fill_defaults=False)[1]:
                dropped.append(key)
            else:
                kept[key] = raw
        return kept, dropped

    def decode(self, params: Mapping[str, Any], fill_defaults: bool = True) -> tuple[dict[str, Any], list[str]]:
        """Query parameters -> (state, messages for values that were ignored).

        With ``fill_defaults`` every field is in the state (default where absent or invalid); without,
        only the fields that were given and valid. Unknown parameters are ignored (Streamlit's own etc.).
        """
        state = self.defaults() if fill_defaults else {}
        problems: list[str] = []
        for key, f in self.fields.items():
            if key not in params:
                continue
            raw = params[key]
            if isinstance(raw, (list, tuple)):  # st.query_params.get_all
                raw = raw[-1] if raw else ""
            raw = str(raw)
            try:
                if len(raw) > MAX_PARAM_CHARS:
                    raise DeepLinkError(f"longer than {MAX_PARAM_CHARS} characters")
                state[key] = self._decode_one(f, raw)
            except DeepLinkError as e:
                problems.append(f"link parameter '{key}' ignored: {e}")
        return state, problems

    @staticmethod
    def _encode_one(f: LinkField, value: Any) -> str:
        if f.kind == "bool":
            return "1" if value else "0"
        if f.kind == "values":
            return encode_values(value)
        if f.kind == "list":
            return ",".join(str(v) for v in value)
        if f.kind == "float":
            return _dump(float(value))
        return str(value)

    @staticmethod
    def _decode_one(f: LinkField, raw: str) -> Any:
        if f.kind == "str":
            value: Any = raw
        elif f.kind == "bool":
            low = raw.strip().lower()
            if low not in ("1", "0", "true", "false", "yes", "no", "on", "off"):
                raise DeepLinkError(f"{raw!r} is not a yes/no value")
            value = low in ("1", "true", "yes", "on")
        elif f.kind == "int":
            if not _INT.fullmatch(raw.strip()):
                raise DeepLinkError(f"{raw[:40]!r} is not a whole number (digits 0-9)")
            value = int(raw.strip())
        elif f.kind == "float":
            if not _FLOAT.fullmatch(raw.strip()):
                raise DeepLinkError(f"{raw[:40]!r} is not a number (digits 0-9)")
            value = float(raw.strip())
            if not math.isfinite(value):
                raise DeepLinkError(f"{raw!r} is not a finite number")
        elif f.kind == "values":
            value = decode_values(raw)
        else:  # list
            value = [p.strip() for p in raw.split(",") if p.strip()]
            if f.choices is not None:
                bad = [p for p in value if p not in f.choices]
                if bad:
                    raise DeepLinkError(f"unknown {', '.join(bad)}; choose from {', '.join(map(str, f.choices))}")
            return value
        if f.choices is not None and value not in f.choices:
            raise DeepLinkError(f"{raw!r} is not one of {', '.join(map(str, f.choices))}")
        if f.minimum is not None and value < f.minimum:
            raise DeepLinkError(f"{value} is below {f.minimum}")
        if f.maximum is not None and value > f.maximum:
            raise DeepLinkError(f"{value} is above {f.maximum}")
        return value


def page_url(base_url: str, url_path: str, params: Mapping[str, str]) -> str:
    """A shareable link: ``base/url_path?k=v...`` with proper escaping."""
    from urllib.parse import urlencode
    base = base_url.rstrip("/") + "/" + url_path.strip("/")
    return base + ("?" + urlencode(params) if params else "")
