"""Why a flag is on or off, as a tree: `Engine.explain`'s explanation drawn with box
characters by ``flagcore explain`` (`flagcore_cli.explain_command`) and as nested lists by
the admin UI's playground page, in one wording."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["JSON", "TreeNode", "decision_tree", "quoted", "render_tree"]


def quoted(text: str) -> str:
    """User text, quoted with every control character escaped: nothing typed into a flag
    or a context can move the cursor or colour the terminal."""
    return json.dumps(text, ensure_ascii=False)


class _Style:
    def __init__(self, colour: bool) -> None:
        self.colour = colour

    def _wrap(self, code: str, text: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self.colour else text

    def yes(self, text: str) -> str:
        return self._wrap("32", text)

    def no(self, text: str) -> str:
        return self._wrap("31", text)

    def bold(self, text: str) -> str:
        return self._wrap("1", text)

    def dim(self, text: str) -> str:
        return self._wrap("2", text)

    def verdict(self, on: bool | None, yes: str = "yes", no: str = "no") -> str:
        if on is None:
            return self.dim("unknown")
        return self.yes(yes) if on else self.no(no)


TreeNode = tuple[str, list["TreeNode"]]
_Node = TreeNode
JSON = dict[str, Any]


def render_tree(explanation: JSON, context: JSON, *, colour: bool) -> str:
    """An explanation (`FlagExplanation.to_json`, with its ``environment``) as an
    indented tree, one decision per line."""
    style = _Style(colour)
    verdict = style.verdict(explanation["enabled"], "ON", "OFF")
    head = f"{style.bold(quoted(explanation['name']))} is {verdict}"
    head += f" in {quoted(explanation['environment'])}"
    lines = [head, f"context {json.dumps(context, ensure_ascii=False, sort_keys=True)}"]
    lines.extend(_draw(decision_tree(explanation, colour=colour), ""))
    return "\n".join(lines) + "\n"


def decision_tree(explanation: JSON, *, colour: bool = False) -> list[TreeNode]:
    """The tree's branches, each ``(text, branches below)``: the CLI draws them with
    box characters, the admin UI's playground page as nested lists (one wording)."""
    style = _Style(colour)
    switch = style.verdict(explanation["enabledInEnvironment"], "on", "off")
    children: list[_Node] = [(f"environment switch: {switch}", [])]
    if explanation["problem"] is not None:
        children.append((style.no(f"cannot be evaluated: {explanation['problem']}"), []))
    if explanation["dependencies"]:
        satisfied = style.verdict(
            explanation["dependenciesSatisfied"], "satisfied", "not satisfied"
        )
        children.append(
            (
                f"dependencies: {satisfied}",
                [_dependency(d, style) for d in explanation["dependencies"]],
            )
        )
    children.append(_strategies(explanation, style))
    children.append(_variant(explanation, style))
    return children


def _draw(nodes: list[_Node], prefix: str) -> list[str]:
    out = []
    for index, (text, below) in enumerate(nodes):
        last = index == len(nodes) - 1
        out.append(prefix + ("└─ " if last else "├─ ") + text)
        out.extend(_draw(below, prefix + ("   " if last else "│  ")))
    return out


def _dependency(dependency: JSON, style: _Style) -> _Node:
    wanted = "enabled" if dependency["requiredEnabled"] else "disabled"
    if dependency["requiredVariants"]:
        wanted += " with variant "
        wanted += " or ".join(quoted(v) for v in dependency["requiredVariants"])
    if not dependency["found"]:
        seen = "missing"
    else:
        seen = "enabled" if dependency["parentEnabled"] else "disabled"
        if dependency["parentVariant"] is not None:
            seen += f", variant {quoted(dependency['parentVariant'])}"
    text = f"{quoted(dependency['feature'])} must be {wanted}: it is {seen}"
    return (f"{text} → {style.verdict(dependency['satisfied'])}", [])


def _strategies(explanation: JSON, style: _Style) -> _Node:
    strategies = explanation["strategies"]
    if not strategies:
        return ("no strategies: on for everyone when the flag is on", [])
    verdict = style.verdict(explanation["strategiesResult"], "one matches", "none matches")
    matched = explanation["matchedStrategy"]
    return (f"strategies: {verdict}", [_strategy(s, matched, style) for s in strategies])


def _strategy(strategy: JSON, matched: int | None, style: _Style) -> _Node:
    name = quoted(strategy["name"])
    if strategy["title"]:
        name += f" ({quoted(strategy['title'])})"
    label = f"{strategy['index'] + 1}. {name}"
    if strategy["disabled"]:
        label += style.dim(" [disabled]")
    verdict = style.verdict(strategy["result"], "matches", "does not match")
    if strategy["index"] == matched:
        verdict += style.bold(" ← decides")
    below: list[_Node] = []
    parameters = strategy["parameters"]
    if parameters:
        shown = ", ".join(f"{k}={quoted(v)}" for k, v in sorted(parameters.items()))
        below.append((style.dim(f"parameters: {shown}"), []))
    below.extend(_constraint(c, style) for c in strategy["constraints"])
    below.extend(_segment(s, style) for s in strategy["segments"])
    if not strategy["known"]:
        below.append((style.no("no implementation of this strategy: off"), []))
    elif strategy["rollout"] is not None:
        below.append(_rollout(strategy, style))
    elif strategy["strategyResult"] is not None:
        below.append((f"{name} rule → {style.verdict(strategy['strategyResult'])}", []))
    if "problem" in strategy:
        below.append((style.no(f"problem: {strategy['problem']}"), []))
    if strategy["variant"] is not None:
        where = "its variants give" if strategy["result"] else "its variants would give"
        below.append(_choice(where, strategy["variant"], style))
    return (f"{label} → {verdict}", below)


def _constraint(constraint: JSON, style: _Style) -> _Node:
    values = constraint["values"] if "value" not in constraint else [constraint["value"]]
    shown = ", ".join(quoted(v) for v in values[:10])
    if len(values) > 10:
        shown += f", … ({len(values)} values)"
    operator = ("NOT " if constraint["inverted"] else "") + constraint["operator"]
    if constraint["caseInsensitive"]:
        operator += " (case-insensitive)"
    value = constraint["contextValue"]
    seen = "no value" if value is None else quoted(value)
    text = f"{quoted(constraint['contextName'])} {operator} [{shown}]: the context has {seen}"
    below: list[_Node] = []
    if "problem" in constraint:
        below.append((style.no(constraint["problem"]), []))
    return (f"{text} → {style.verdict(constraint['result'])}", below)


def _segment(segment: JSON, style: _Style) -> _Node:
    name = "missing" if segment["name"] is None else quoted(segment["name"])
    below = [_constraint(c, style) for c in segment["constraints"]]
    if "problem" in segment:
        below.append((style.no(segment["problem"]), []))
    return (f"segment {segment['id']} {name} → {style.verdict(segment['result'])}", below)


def _rollout(strategy: JSON, style: _Style) -> _Node:
    rollout = strategy["rollout"]
    percentage = "?" if rollout["percentage"] is None else f"{rollout['percentage']}%"
    group = "none (off)" if rollout["groupId"] is None else quoted(rollout["groupId"])
    text = f"rollout {percentage} by {quoted(rollout['stickiness'])}, group {group}: "
    if rollout["random"]:
        text += "no sticky value, a random bucket"
    elif rollout["stickinessValue"] is None:
        text += "the context has no value to hash"
    else:
        text += f"{quoted(rollout['stickinessValue'])} hashes to bucket {rollout['bucket']}"
    return (f"{text} → {style.verdict(strategy['strategyResult'])}", [])


def _variant(explanation: JSON, style: _Style) -> _Node:
    choice = explanation["variantChoice"]
    if choice is None:
        return (f"variant: {quoted(explanation['variant']['name'])} (the flag is off)", [])
    where = "flag variants"
    if choice["origin"] == "strategy":
        where = f"variants of strategy {choice.get('strategyIndex', 0) + 1}"
    return _choice(where, choice, style)


def _choice(where: str, choice: JSON, style: _Style) -> _Node:
    variant = choice["variant"]
    name = style.bold(quoted(variant["name"]))
    if choice["origin"] == "none" or "how" not in choice:
        return (f"variant: {name} (no variants)", [])
    how = choice["how"]
    stickiness = quoted(choice["stickiness"])
    if how == "override":
        override = choice["override"]
        reason = f"override: {quoted(override['contextName'])} is {quoted(override['value'])}"
    elif how == "hash":
        bucket = f"bucket {choice['bucket']} of {choice['totalWeight']}"
        reason = f"{stickiness} {quoted(choice['stickinessValue'])} → {bucket}"
    elif how == "random":
        reason = f"no {stickiness} value: a random bucket"
    else:
        reason = "no weights"
    payload = ""
    if "payload" in variant:
        payload = f", payload {json.dumps(variant['payload'], ensure_ascii=False)}"
    return (f"{where}: {name}{payload} ({reason})", [])
