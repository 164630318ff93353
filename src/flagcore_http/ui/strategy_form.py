"""The strategy editor's state: every field as typed, built from the posted form.

The editor is redrawn from a `StrategyForm`, never from a `Strategy`: a refused form
comes back with every parameter, constraint row, segment box and variant row exactly as
the person left them (invalid values included), so fixing one field and saving again
stores what they meant and nothing else. A required parameter left blank is an error on
its field, never a default.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import attrs
from multidict import MultiDict

from flagcore.entities import StrategyDefinition
from flagcore.errors import ErrorDetail, InvalidInput
from flagcore.model import Strategy
from flagcore_http.ui.forms import (
    Row,
    checked,
    constraint_rows,
    constraints_from,
    rows_of_constraints,
    rows_of_variants,
    segment_ids_from,
    variant_rows,
    variants_from,
)

__all__ = ["PARAMETER_PREFIX", "StrategyForm"]

PARAMETER_PREFIX = "param-"
T = TypeVar("T")


@attrs.frozen
class StrategyForm:
    """What the strategy editor shows, as strings (the form's own vocabulary)."""

    name: str
    title: str = ""
    # Every parameter field, the definition's and any other the strategy carries, as typed.
    parameters: dict[str, str] = attrs.field(factory=dict)
    constraints: list[Row] = attrs.field(factory=list)
    segments: tuple[str, ...] = ()  # the ids of the boxes checked, as posted
    variants: list[Row] = attrs.field(factory=list)
    disabled: bool = False

    @classmethod
    def posted(cls, fields: MultiDict[str]) -> StrategyForm:
        return cls(
            name=fields.get("name", ""),
            title=fields.get("title", ""),
            parameters={
                key.removeprefix(PARAMETER_PREFIX): value
                for key, value in fields.items()
                if key.startswith(PARAMETER_PREFIX)
            },
            constraints=constraint_rows(fields),
            segments=tuple(fields.getall("segments", [])),
            variants=variant_rows(fields),
            disabled=checked(fields, "disabled"),
        )

    @classmethod
    def of(cls, strategy: Strategy, definition: StrategyDefinition | None) -> StrategyForm:
        """A stored strategy as the editor shows it (list parameters one per line)."""
        lists = {p.name for p in definition.parameters if p.type == "list"} if definition else ()
        return cls(
            name=strategy.name,
            title=strategy.title or "",
            parameters={
                name: value.replace(",", "\n") if name in lists else value
                for name, value in strategy.parameters.items()
            },
            constraints=rows_of_constraints(strategy.constraints),
            segments=tuple(str(segment) for segment in strategy.segments),
            variants=rows_of_variants(strategy.variants),
            disabled=strategy.disabled,
        )

    @classmethod
    def new(cls, definition: StrategyDefinition, flag_name: str) -> StrategyForm:
        """A new strategy: flexibleRollout's stickiness and group shown filled in, as
        Unleash's editor fills them, so the person sees (and can change) what is saved."""
        parameters = {p.name: "" for p in definition.parameters}
        if "stickiness" in parameters:
            parameters["stickiness"] = "default"
        if "groupId" in parameters:
            parameters["groupId"] = flag_name
        return cls(definition.name, parameters=parameters)

    def parameter_names(self, definition: StrategyDefinition | None) -> list[str]:
        """The definition's parameters in its order, then any other this form carries."""
        known = [p.name for p in definition.parameters] if definition else []
        return known + [name for name in self.parameters if name not in known]

    def to_strategy(self, definition: StrategyDefinition | None) -> Strategy:
        """The strategy to save. `InvalidInput` names every field the form cannot read
        at once: each required parameter left blank (``$.parameters.<name>``), and the
        first bad value of each kind of row (a weight that is no number, JSON that is
        not JSON)."""
        required = [p.name for p in definition.parameters if p.required] if definition else []
        blank = [name for name in required if not self.parameters.get(name, "").strip()]
        problems = (
            [
                InvalidInput(
                    f"required: {', '.join(blank)}",
                    [ErrorDetail("required", f"$.parameters.{name}") for name in blank],
                )
            ]
            if blank
            else []
        )
        constraints = _read(problems, lambda: tuple(constraints_from(self.constraints))) or ()
        segments = _read(problems, lambda: segment_ids_from(self.segments)) or ()
        variants = _read(problems, lambda: tuple(variants_from(self.variants))) or ()
        if problems:
            raise InvalidInput(
                "; ".join(p.message for p in problems),
                [detail for p in problems for detail in p.details],
            )
        return Strategy(
            self.name,
            self._parameters(),
            constraints=constraints,
            segments=segments,
            variants=variants,
            disabled=self.disabled,
            title=self.title if self.title.strip() else None,
        )

    def _parameters(self) -> dict[str, str]:
        parameters = {}
        for name, value in self.parameters.items():
            if value.strip():
                # List parameters are typed one per line; Unleash stores them comma-separated.
                lines = [line.strip() for line in value.splitlines() if line.strip()]
                parameters[name] = ",".join(lines) if "\n" in value else value.strip()
        return parameters


def _read(problems: list[InvalidInput], reader: Callable[[], T]) -> T | None:
    """``reader()``, or None with its refusal added to ``problems``."""
    try:
        return reader()
    except InvalidInput as problem:
        problems.append(problem)
        return None
