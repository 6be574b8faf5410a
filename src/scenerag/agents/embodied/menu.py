"""What the planner may do at one step, as data: the actions on offer, the objects each may name (ids of
the step's scene-graph context whose affordances allow it), the calls refused as unchanged repeats of a
failure, and the plain-text reply format with its GBNF grammar and parser.

Contract: ``build_menu(...)`` returns an :class:`ActionMenu`. ``menu.grammar()`` is a GBNF grammar whose
every sentence is a reply ``Thought: ...`` [``Objects: ...``] ``Action: name(args)`` naming an action on
offer with arguments it allows (object ids from the menu, free words for ``text`` parameters), so a model
decoding under it always produces an action that parses, names an object that exists in its context, and
one that object affords. ``menu.parse(text)`` reads such a reply from any model (endpoints ignore
grammars): it tolerates spacing, quotes and case, and returns a :class:`ParsedReply` whose ``error`` says
what was wrong (unknown action, an object the action cannot take, a refused repeat) in words the planner
feeds back.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from scenerag.agents.embodied.environment import DONE_ACTION, ActionParameter, ActionSpec
from scenerag.agents.embodied.errors import EmbodiedConfigError

CallKey = tuple[str, tuple[str, ...]]
"""An action call as a hashable key: ``(name, argument values in parameter order)``."""

MAX_TEXT_CHARS = 40
MAX_OBJECT_WORDS_CHARS = 30
MAX_OBJECTS = 3
LISTED_IDS = 12  # ids named in an error message before "..."
CLASS_KEY = "class"
"""The key under which :func:`build_menu`'s ``objects`` may carry an object's class (``held_fits`` rules)."""


@dataclass(frozen=True)
class MenuAction:
    """One action on offer: its spec and, per parameter, the object ids (object parameters) or words (text
    parameters with a vocabulary) it may take; None: free words."""

    spec: ActionSpec
    choices: tuple[tuple[str, ...] | None, ...] = ()
    #: the call without arguments is refused: its optional arguments become required
    needs_argument: bool = False

    @property
    def name(self) -> str:
        return self.spec.name

    def forms(self) -> list[tuple[ActionParameter, tuple[str, ...] | None]]:
        return list(zip(self.spec.parameters, self.choices, strict=True))


@dataclass
class ParsedReply:
    """A reply read by :meth:`ActionMenu.parse`: thought, the objects the thought is about (feedback), the
    action and its keyword arguments; ``error`` is set (action possibly empty) when it cannot be used."""

    thought: str
    objects: list[str]
    action: str
    arguments: dict[str, str]
    error: str | None = None
    refused: bool = False


def _gbnf_literal(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


def _rule_name(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "x"


@dataclass
class ActionMenu:
    """The actions on offer at one step (see the module contract). ``objects_line``: the reply names the
    objects its thought is about (self-query feedback); ``thought_chars`` bounds the thought."""

    actions: list[MenuAction]
    refused: dict[CallKey, str] = field(default_factory=dict)
    objects_line: bool = False
    thought_chars: int = 160
    #: every action the agent may use, offered now or not (to name the arguments of a refused call)
    specs: dict[str, ActionSpec] = field(default_factory=dict)
    #: object id -> attributes of the objects the step could name (to say which affordance one lacks)
    objects: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    #: words the grammar writes at the start of every thought (e.g. the robot's hand), "" for none
    thought_prefix: str = ""
    #: the held object's attributes (None: the hand is empty or what it holds is unknown)
    held: Mapping[str, Any] | None = None

    def unmet(self, name: str, value: str) -> str:
        """Why action ``name`` cannot take object ``value`` now, in words (``""`` when the menu cannot tell:
        an unknown action or object): what the held object lacks (``held_requires``), the attribute values
        its parameter requires that the object lacks, the state of its ``excludes`` the object shows, or
        that the held object does not go in or on it (``held_fits``)."""
        spec = self.specs.get(name)
        known = {i.lower(): i for i in self.objects}.get(value.lower())
        if spec is None or known is None:
            return ""
        attributes = self.objects[known]
        if self.held is not None and spec.held_requires and not spec.hand_allows(self.held):
            needs = ", ".join(f"{k}={_word(v)}" for k, v in spec.held_requires)
            return f"{name} needs a held object with {needs}"
        for parameter in spec.parameters:
            if parameter.kind != "object":
                continue
            missing = [(k, v) for k, v in parameter.requires if k not in attributes or attributes[k] != v]
            if missing:
                needs = ", ".join(f"{k}={_word(v)}" for k, v in missing)
                has = ", ".join(
                    f"{k}={_word(attributes[k])}" if k in attributes else f"no {k}" for k, _ in missing
                )
                return f"{name} needs {needs}; {known} has {has}"
            state = parameter.excluded_by(attributes)
            if state:
                shows = ", ".join(f"{k}={_word(v)}" for k, v in state)
                return f"{name} cannot take an object with {shows}, as {known} has"
            if self.held is not None and not parameter.fits(attributes.get(CLASS_KEY), self.held):
                return f"the object you hold does not go in or on a {attributes.get(CLASS_KEY, known)}"
        if spec.hand == "empty":
            return f"{name} needs an empty hand"
        if spec.hand == "holding":
            return f"{name} needs a held object"
        return ""

    @property
    def names(self) -> list[str]:
        return [a.name for a in self.actions]

    def action(self, name: str) -> MenuAction | None:
        return next((a for a in self.actions if a.name == name), None)

    def affordances(self) -> dict[str, list[str]]:
        """Object id -> the actions on offer that take it for its affordances (an object parameter with
        ``requires``), in menu order: what the robot can do to each object now."""
        out: dict[str, list[str]] = {}
        for item in self.actions:
            for parameter, ids in item.forms():
                if ids and (parameter.requires or parameter.excludes):
                    for object_id in ids:
                        names = out.setdefault(object_id, [])
                        if item.name not in names:
                            names.append(item.name)
        return out

    def calls(self) -> list[str]:
        """The object calls on offer for their affordances, ``action(id)``, grouped by action in menu order
        (what :meth:`affordances` says per object, as calls)."""
        out: list[str] = []
        for item in self.actions:
            for parameter, ids in item.forms():
                if ids and (parameter.requires or parameter.excludes) and parameter.kind == "object":
                    out.extend(f"{item.name}({object_id})" for object_id in ids)
        return out

    # -- the reply format ------------------------------------------------------------------------------------
    def format_lines(self) -> list[str]:
        """The reply format, as prompt lines."""
        lines = ["Thought: <one short sentence: what you know and what to do next>"]
        if self.objects_line:
            lines.append("Objects: <the object types it is about, or none>")
        lines.append("Action: <action>(<argument>)")
        return lines

    def grammar(self) -> str:
        """GBNF grammar of a reply naming one action on offer with arguments it allows."""
        rules: dict[str, str] = {}
        prefix = f" {_gbnf_literal(self.thought_prefix)}" if self.thought_prefix else ""
        head = f'"Thought: "{prefix} thought "\\n"'
        if self.objects_line:
            head += ' "Objects: " objects "\\n"'
        rules["root"] = f'{head} "Action: " action'
        rules["thought"] = f"[^\\n]{{1,{self.thought_chars}}}"
        if self.objects_line:
            rules["objects"] = f'"none" | object-words (", " object-words){{0,{MAX_OBJECTS - 1}}}'
            rules["object-words"] = f"[a-zA-Z] [a-zA-Z ]{{0,{MAX_OBJECT_WORDS_CHARS - 1}}}"
        rules["text"] = f"[a-zA-Z0-9] [a-zA-Z0-9 _-]{{0,{MAX_TEXT_CHARS - 1}}}"
        alternatives: list[str] = []
        for item in self.actions:
            base = _rule_name(item.name)
            parts: list[str] = []
            for index, (parameter, ids) in enumerate(item.forms()):
                refused_texts = {
                    values[index]
                    for (name, values), _ in self.refused.items()
                    if name == item.name and len(values) > index and ids is None
                }
                if ids is None and refused_texts:  # free words, except the refused ones (in any spelling)
                    symbol = f"{base}-text{index}"
                    rules.update(_text_excluding(symbol, refused_texts))
                elif ids is None:
                    symbol = "text"
                elif ids:
                    symbol = f"{base}-arg{index}"
                    rules[symbol] = " | ".join(_gbnf_literal(i) for i in ids)
                else:  # an optional object parameter with no candidate: the action without it
                    continue
                parts.append(symbol if parameter.required or item.needs_argument else f"({symbol})?")
            if parts:
                arguments = ' ", " '.join(parts)
                body = f"{_gbnf_literal(item.name + '(')} {arguments} {_gbnf_literal(')')}"
            else:
                body = _gbnf_literal(f"{item.name}()")
            rules[f"act-{base}"] = body
            alternatives.append(f"act-{base}")
        if not alternatives:
            raise EmbodiedConfigError("an action menu needs at least one action")
        rules["action"] = " | ".join(alternatives)
        return "\n".join(f"{name} ::= {body}" for name, body in rules.items()) + "\n"

    # -- reading a reply -------------------------------------------------------------------------------------
    def parse(self, text: str) -> ParsedReply:
        """The reply ``text`` read against this menu (see the module contract)."""
        thought = _field(text, "thought")
        objects = _objects(_field(text, "objects")) if self.objects_line else []
        match = _ACTION.search(text)
        if match is None:
            return ParsedReply(
                thought, objects, "", {}, error="no 'Action: name(argument)' line: reply in the format shown"
            )
        name = match.group(1).strip().lower()
        raw_args = (
            [a.strip().strip("'\"`").strip() for a in match.group(2).split(",")] if match.group(2) else []
        )
        raw_args = [a for a in raw_args if a]
        spec = self.specs.get(name)
        wanted = call_key(
            name,
            {p.name: a for p, a in zip(spec.parameters, raw_args, strict=False)} if spec else {},
            spec,
        )
        for (refused_name, values), message in self.refused.items():
            if (refused_name, tuple(v.lower() for v in values)) == (
                wanted[0],
                tuple(v.lower() for v in wanted[1]),
            ):
                arguments = (
                    {p.name: v for p, v in zip(spec.parameters, values, strict=False)}
                    if spec is not None
                    else {}
                )
                return ParsedReply(thought, objects, name, arguments, error=message, refused=True)
        item = self.action(name)
        if item is None:
            why = self.unmet(name, raw_args[0]) if raw_args else ""
            return ParsedReply(
                thought,
                objects,
                name,
                {},
                error=f"{name!r} is not an action you can take now"
                + (f" ({why})" if why else "")
                + f"; you can: {', '.join(self.names)}",
            )
        forms = item.forms()
        if len(raw_args) > len(forms) or len(raw_args) < sum(p.required for p, _ in forms):
            signature = item.spec.signature() if item.name != DONE_ACTION else "done()"
            return ParsedReply(thought, objects, name, {}, error=f"{name} takes {signature}")
        arguments: dict[str, str] = {}
        for (parameter, ids), value in zip(forms, raw_args, strict=False):
            if ids is None:
                arguments[parameter.name] = value[:MAX_TEXT_CHARS]
                continue
            if parameter.kind == "text":
                canonical = {normalize_text(i): i for i in ids}.get(normalize_text(value))
            else:
                canonical = {i.lower(): i for i in ids}.get(value.lower())
            if canonical is None:
                shown = ", ".join(ids[:LISTED_IDS]) + (" ..." if len(ids) > LISTED_IDS else "")
                why = self.unmet(name, value) if parameter.kind == "object" else ""
                return ParsedReply(
                    thought,
                    objects,
                    name,
                    {},
                    error=f"{name} cannot take {value!r} now"
                    + (f" ({why})" if why else "")
                    + f"; it can take: {shown or 'nothing'}",
                )
            arguments[parameter.name] = canonical
        return ParsedReply(thought, objects, name, arguments)


_FIELD = re.compile(r"^\s*(thought|objects)\s*:\s*(.*?)\s*$", re.IGNORECASE | re.MULTILINE)
_ACTION = re.compile(r"action\s*:\s*`?\s*([A-Za-z_]+)\s*\(([^)]*)\)", re.IGNORECASE)


def _word(value: Any) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def _field(text: str, name: str) -> str:
    for match in _FIELD.finditer(text):
        if match.group(1).lower() == name:
            return match.group(2)
    return ""


def _objects(text: str) -> list[str]:
    """The object words of an ``Objects:`` line (``none`` and empties dropped, at most MAX_OBJECTS)."""
    out: list[str] = []
    for part in text.split(","):
        words = " ".join(part.split())[:MAX_OBJECT_WORDS_CHARS].strip()
        if words and words.lower() not in ("none", "nothing", "-") and words not in out:
            out.append(words)
    return out[:MAX_OBJECTS]


def normalize_text(text: str) -> str:
    """A text argument as calls are compared: lower-case letters and digits only (``Light switch``,
    ``light_switch`` and ``LightSwitch`` are one call)."""
    return re.sub(r"[^a-z0-9]", "", text.lower())


def call_key(action: str, arguments: Mapping[str, str], spec: ActionSpec | None = None) -> CallKey:
    """The hashable key of a call; argument values in ``spec``'s parameter order (text arguments
    normalized by :func:`normalize_text`, so ``search(Light switch)`` repeats ``search(lightswitch)``)."""
    if spec is None:
        values = tuple(str(v) for v in arguments.values())
    else:
        values = tuple(
            normalize_text(arguments[p.name]) if p.kind == "text" else arguments[p.name]
            for p in spec.parameters
            if p.name in arguments
        )
    return action, values


_LETTERS = "abcdefghijklmnopqrstuvwxyz"
_ALNUM = _LETTERS + _LETTERS.upper() + "0123456789"
_SEPARATORS = " _-"


def _char_class(chars: str) -> str:
    """A GBNF character class of exactly ``chars`` (``-`` last so it is literal)."""
    body = "".join(sorted(set(chars) - {"-"})) + ("-" if "-" in chars else "")
    return f"[{body}]"


def _text_excluding(name: str, refused: Iterable[str]) -> dict[str, str]:
    """GBNF rules ``name ::= ...``: free words (a letter or digit first, then letters, digits, ``_``, ``-``,
    spaces) whose :func:`normalize_text` form is none of ``refused`` (already normalized). A trie of the
    refused words: at each node the reply may add a separator (ignored by the comparison), take a refused
    word's next letter (either case), take any other letter or digit and continue freely, or stop where no
    refused word ends."""
    words = sorted({w for w in refused if w})
    tail = f"{name}-tail"
    rules: dict[str, str] = {tail: f"{_char_class(_ALNUM + _SEPARATORS)}*"}
    counter = iter(range(10**6))

    def node(prefix: str, rule: str, root: bool) -> None:
        children = sorted({w[len(prefix)] for w in words if w.startswith(prefix) and len(w) > len(prefix)})
        options: list[str] = []
        if not root:
            options.append(f"{_char_class(_SEPARATORS)} {rule}")
        for char in children:
            child = f"{name}-{next(counter)}"
            node(prefix + char, child, False)
            options.append(f"{_char_class(char + char.upper())} {child}")
        others = "".join(c for c in _ALNUM if c.lower() not in children)
        options.append(f"{_char_class(others)} {tail}")
        if not root and prefix not in words:
            options.append('""')
        rules[rule] = " | ".join(options)

    node("", name, True)
    return rules


DONE_SPEC = ActionSpec(DONE_ACTION, "the task is complete.")


def _whole(values: Sequence[str], refused: Collection[str], key: Callable[[str], str]) -> tuple[str, ...]:
    """``values`` without the refused ones (compared by ``key``) and without those that are the beginning
    of a refused one: a grammar of literal alternatives lets a model that means the refused ``Potato`` stop
    at ``Pot`` (or ``Cabinet_1`` for ``Cabinet_11``), so only whole words of what it may mean stay."""
    return tuple(v for v in values if not any(r.startswith(key(v)) for r in refused))


def build_menu(
    specs: Sequence[ActionSpec],
    offered: Iterable[str],
    objects: Mapping[str, Mapping[str, Any]],
    *,
    holding: bool,
    refused: Mapping[CallKey, str] | None = None,
    objects_line: bool = False,
    thought_chars: int = 160,
    words: Collection[str] | None = None,
    thought_prefix: str = "",
    held: Mapping[str, Any] | None = None,
) -> ActionMenu:
    """The menu of one step.

    ``specs``: the environment's actions; ``offered``: the action names this agent may use (``done``
    included); ``objects``: object id -> attributes as the robot knows them, for the objects in the step's
    context (what the planner can name); ``holding``: whether the robot's hand holds something (actions
    whose ``hand`` rule fails are left out); ``refused``: calls that failed with nothing changed since,
    mapped to the message saying why they are refused (their ids are left out of the grammar; the parser
    refuses text-argument repeats); ``words``: where given, a text parameter with a vocabulary offers only
    these of its words (compared by :func:`normalize_text`; e.g. the object types the task is about);
    ``thought_prefix``: words the grammar writes at the start of the thought; ``held``: the held object's
    attributes (with its class under :data:`CLASS_KEY`), which leave out the actions whose
    ``held_requires`` it lacks and the objects a ``held_fits`` rule rules out (``objects`` carry their
    class under :data:`CLASS_KEY` for it); None: no such restriction. An
    action whose required object parameter has no candidate is left out;
    if refusals would leave nothing, they are ignored for the grammar (the parser still refuses them).
    """
    by_name = {s.name: s for s in specs}
    refused = dict(refused or {})
    keep = None if words is None else {normalize_text(w) for w in words}
    actions: list[MenuAction] = []
    offered_specs: dict[str, ActionSpec] = {}
    for name in offered:
        spec = DONE_SPEC if name == DONE_ACTION else by_name.get(name)
        if spec is None:
            raise EmbodiedConfigError(
                f"no action spec for {name!r}", hint="offer only the environment's actions"
            )
        offered_specs[name] = spec
        if (spec.hand == "empty" and holding) or (spec.hand == "holding" and not holding):
            continue
        if holding and held is not None and not spec.hand_allows(held):
            continue
        choices: list[tuple[str, ...] | None] = []
        usable = True
        for parameter in spec.parameters:
            if parameter.kind == "text":
                if not parameter.choices:
                    choices.append(None)  # free words
                    continue
                words = parameter.choices
                if keep is not None:
                    words = tuple(w for w in words if normalize_text(w) in keep)
                if len(spec.parameters) == 1:
                    words = _whole(words, {v[0] for n, v in refused if n == name and v}, normalize_text)
                if not words and parameter.required:
                    usable = False
                choices.append(words)
                continue
            ids = tuple(
                i
                for i, attributes in objects.items()
                if parameter.allows(attributes)
                and (held is None or parameter.fits(attributes.get(CLASS_KEY), held))
            )
            if len(spec.parameters) == 1:
                ids = _whole(ids, {v[0] for n, v in refused if n == name and v}, str)
            if not ids and parameter.required:
                usable = False
            choices.append(ids)
        bare_refused = (name, ()) in refused and all(not p.required for p in spec.parameters)
        if bare_refused and not any(c is None or c for c in choices):
            usable = False  # no arguments, or none to give: only the refused bare call is left
        if usable:
            actions.append(MenuAction(spec, tuple(choices), needs_argument=bare_refused))
    menu = ActionMenu(
        actions, refused, objects_line, thought_chars, offered_specs, objects, thought_prefix, held
    )
    if not actions:
        fallback = build_menu(
            specs,
            offered,
            objects,
            holding=holding,
            objects_line=objects_line,
            words=words,
            thought_prefix=thought_prefix,
            held=held,
        )
        fallback.refused = refused
        fallback.thought_chars = thought_chars
        return fallback
    return menu
