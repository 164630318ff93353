"""The preview on every change request (issue 30): per flag of the request, what all its
changes together would do to the contexts recently seen in the request's environment,
before anyone approves it.

Each flag's end state comes from applying the request's changes for it and rolling them
back (`ChangeRequests.flag_end_states`, the same write methods applying runs); it is then
previewed as a direct change to that state would be (`Previews.preview_input`), so a
request and `preview_change` of the same end state count the same. What a preview cannot
count (an archive, a dependency, a segment's constraints) is said in words instead.
"""

from __future__ import annotations

import attrs

from flagcore.change_requests import ChangeAction, ChangeRequest
from flagcore.errors import FlagcoreError
from flagcore.service.change_requests import ChangeRequests, FlagEndState
from flagcore.service.context import ServiceContext
from flagcore.service.previews import PreviewInput, Previews
from flagcore.wire import ChangeRequestPreviewAnswer, FlagChangePreview

__all__ = ["ChangeRequestPreviewInput", "ChangeRequestPreviews", "FlagPreviewInput"]

_UNCOUNTED = {
    ChangeAction.ARCHIVE_FEATURE: (
        "archiveFeature: once archived, SDKs no longer get this flag, so it is off for "
        "every context; not counted"
    ),
    ChangeAction.ADD_DEPENDENCY: (
        "addDependency: the dependency on a parent flag is not counted "
        "(the preview scores enabled, strategies and variants)"
    ),
    ChangeAction.DELETE_DEPENDENCY: (
        "deleteDependency: removing the dependency is not counted "
        "(the preview scores enabled, strategies and variants)"
    ),
}


@attrs.frozen
class FlagPreviewInput:
    """One flag's preview as read (scored later), or None, with its notes."""

    flag: str
    read: PreviewInput | None
    notes: tuple[str, ...]

    def scored(self) -> FlagChangePreview:
        """The flag's preview scored on the sample it was read with."""
        return FlagChangePreview(
            self.flag, None if self.read is None else self.read.scored(), self.notes
        )


@attrs.frozen
class ChangeRequestPreviewInput:
    """Everything a request's preview is scored from, read at once."""

    request: ChangeRequest
    features: tuple[FlagPreviewInput, ...]
    segment_changes: tuple[str, ...]

    def scored(self) -> ChangeRequestPreviewAnswer:
        """Every flag scored (seconds for a large sample: run off the store's thread)."""
        return ChangeRequestPreviewAnswer(
            self.request.id,
            self.request.environment,
            self.request.state.value,
            tuple(feature.scored() for feature in self.features),
            self.segment_changes,
        )


class ChangeRequestPreviews:
    """Previews of change requests, over the requests and the flag previews."""

    def __init__(
        self, context: ServiceContext, *, change_requests: ChangeRequests, previews: Previews
    ) -> None:
        self._context = context
        self._change_requests = change_requests
        self._previews = previews

    def change_request_preview_input(
        self, project: str, request_id: int
    ) -> ChangeRequestPreviewInput:
        """What `ChangeRequestPreviewInput.scored` scores: each flag's end state read and
        previewed, the segment changes stated. `NotFound` for no such request, `Conflict`
        once it is closed (applied, rejected, cancelled)."""
        request, states = self._change_requests.flag_end_states(project, request_id)
        features = tuple(self._flag_input(request, state) for state in states)
        segments = tuple(
            f"{change.action.value}: segment {change.segment} changes for every strategy "
            "that uses it, in every flag; not counted"
            for change in request.changes
            if change.feature is None
        )
        return ChangeRequestPreviewInput(request, features, segments)

    def _flag_input(self, request: ChangeRequest, state: FlagEndState) -> FlagPreviewInput:
        notes = list(dict.fromkeys(_UNCOUNTED[a] for a in state.actions if a in _UNCOUNTED))
        if state.failure is not None:
            notes.append(f"the changes cannot be applied as they stand: {state.failure}")
        read = None
        if state.change is not None:
            try:
                read = self._previews.preview_input(
                    request.project, request.environment, state.flag, state.change
                )
            except FlagcoreError as error:
                notes.append(f"not previewed: {error.message}")
        return FlagPreviewInput(state.flag, read, tuple(notes))
