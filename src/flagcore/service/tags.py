"""Tag types and the tags on flags."""

from __future__ import annotations

from flagcore.entities import FlagDefinition, Tag, TagType
from flagcore.errors import Conflict, ErrorDetail, InvalidInput, NameConflict, NotFound
from flagcore.ports import TagRepository, TagWrite
from flagcore.service.context import SYSTEM, Actor, ServiceContext, authorize
from flagcore.service.lookups import active_flag
from flagcore.validation import check_name
from flagcore.wire.event_data import NameData

__all__ = ["Tags", "checked_tag", "require_tag_type"]

TAG_VALUE_LENGTH = (2, 50)


def checked_tag(tag: Tag, path: str) -> Tag:
    """The tag with its value trimmed, or `InvalidInput` (at ``path``) if the value's
    length is out of bounds."""
    low, high = TAG_VALUE_LENGTH
    if not isinstance(tag.value, str) or not low <= len(tag.value.strip()) <= high:
        raise InvalidInput(
            f"a tag value has {low} to {high} characters",
            [ErrorDetail(f"{low} to {high} characters", f"{path}.value")],
        )
    return Tag(tag.type, tag.value.strip())


def require_tag_type(tx: TagRepository, tag: Tag, path: str) -> None:
    """`InvalidInput` naming the tag type unless it exists: tag types are created first."""
    if tx.get_tag_type(tag.type) is None:
        raise InvalidInput(
            f'tag type "{tag.type}" does not exist; create it first',
            [ErrorDetail(f'unknown tag type "{tag.type}"', f"{path}.type")],
        )


class Tags:
    def __init__(self, context: ServiceContext) -> None:
        self._context = context

    def list_tag_types(self) -> list[TagType]:
        with self._context.read() as tx:
            return list(tx.list_tag_types())

    def create_tag_type(
        self, name: str, description: str | None = None, *, actor: Actor = SYSTEM
    ) -> TagType:
        actor = authorize(actor, "create_tag_type")
        check_name(name, "tag type")
        with self._context.unit() as tx:
            if tx.get_tag_type(name):
                raise NameConflict(f'a tag type named "{name}" already exists')
            tag_type = TagType(name, description)
            tx.save_tag_type(tag_type)
            self._context.record_event(tx, "tag-type-created", actor, data=NameData(name))
        return tag_type

    def get_tag_type(self, name: str) -> TagType:
        with self._context.read() as tx:
            found = tx.get_tag_type(name)
        if found is None:
            raise NotFound(f'there is no tag type "{name}"')
        return found

    def update_tag_type(
        self, name: str, description: str | None = None, *, actor: Actor = SYSTEM
    ) -> TagType:
        """Replace a tag type's description (its name is its key, as in Unleash)."""
        actor = authorize(actor, "update_tag_type")
        with self._context.unit() as tx:
            before = tx.get_tag_type(name)
            if before is None:
                raise NotFound(f'there is no tag type "{name}"')
            updated = TagType(name, description)
            tx.save_tag_type(updated)
            self._context.record_event(
                tx,
                "tag-type-updated",
                actor,
                data=TagType(name, description),
                pre_data=TagType(name, before.description),
            )
        return updated

    def delete_tag_type(self, name: str, *, actor: Actor = SYSTEM) -> None:
        actor = authorize(actor, "delete_tag_type")
        with self._context.unit() as tx:
            if tx.get_tag_type(name) is None:
                raise NotFound(f'there is no tag type "{name}"')
            used = [flag for flag, tag in tx.list_flag_tags() if tag.type == name]
            if used:
                raise Conflict(
                    f'tag type "{name}" is on {len(used)} flag(s); untag them first',
                    [ErrorDetail(f"tagged: {flag}") for flag in used[:10]],
                )
            tx.delete_tag_type(name)
            self._context.record_event(tx, "tag-type-deleted", actor, data=NameData(name))

    def list_flag_tags(self, flag: str) -> list[Tag]:
        with self._context.read() as tx:
            active_flag(tx, None, flag)
            return [tag for _name, tag in tx.list_flag_tags(flag)]

    def add_flag_tag(self, flag: str, tag: Tag, *, actor: Actor = SYSTEM) -> Tag:
        tag = checked_tag(tag, "$")
        with self._context.unit() as tx:
            definition = active_flag(tx, None, flag)
            actor = authorize(actor, "add_flag_tag", project=definition.project)
            require_tag_type(tx, tag, "$")
            if (flag, tag) in tx.list_flag_tags(flag):
                return tag
            self.tag_flag_in(tx, definition, tag, actor=actor)
        return tag

    def remove_flag_tag(self, flag: str, tag: Tag, *, actor: Actor = SYSTEM) -> None:
        with self._context.unit() as tx:
            definition = active_flag(tx, None, flag)
            actor = authorize(actor, "remove_flag_tag", project=definition.project)
            if (flag, tag) not in tx.list_flag_tags(flag):
                raise NotFound(f'flag "{flag}" has no tag {tag.type}:{tag.value}')
            tx.remove_flag_tag(flag, tag)
            self._context.record_event(
                tx,
                "feature-untagged",
                actor,
                flag=definition,
                pre_data=tag,
            )

    def tag_flag_in(self, tx: TagWrite, flag: FlagDefinition, tag: Tag, *, actor: str) -> None:
        """Put a checked tag, not on the flag yet, on ``flag`` with its event, inside the
        caller's unit of work (`Flags.create_flag` tags a flag as it creates it)."""
        tx.add_flag_tag(flag.name, tag)
        self._context.record_event(tx, "feature-tagged", actor, flag=flag, data=tag)
