"""Who will a change flip: the preview of a proposed flag change, and the samples it
is scored on (issue 30).

`Previews.preview_input` reads, in one transaction, what a preview needs: the flag's
project snapshot of the environment as SDKs see it (`ClientView`), the same with the
proposed change applied (checked as saving it would check it, nothing written), and the
environment's sample. `flagcore.preview.preview_flag_change` scores it, off the store's
thread in the server. The sample's writes are here too: the traffic reservoir's slots
(`write_sampled_contexts`, no event: it is traffic, not a change) and an uploaded
sample (`replace_context_sample`, an event naming who).
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Collection, Mapping, Sequence
from typing import Any

import attrs

from flagcore.context_sample import TRAFFIC, UPLOAD, context_text, without_denied
from flagcore.entities import SampledContext
from flagcore.errors import ErrorDetail, FlagcoreError, InvalidInput, NotFound
from flagcore.model import ClientFeatures, Flag, Strategy
from flagcore.preview import ProposedChange, preview_flag_change, with_flag
from flagcore.service.client import ClientView
from flagcore.service.context import SYSTEM, Actor, ServiceContext, authorize
from flagcore.service.lookups import active_flag, require_environment
from flagcore.service.strategies import Strategies
from flagcore.service.variants import variants_in_unleash_order
from flagcore.tables import CONTEXT_SAMPLES
from flagcore.validation import check_variants
from flagcore.wire import ContextSampleAnswer, PreviewAnswer
from flagcore.wire.event_data import SampleUploadedData

__all__ = ["PreviewInput", "Previews"]


@attrs.frozen
class PreviewInput:
    """Everything a preview is scored from, read at once: the store is not touched again."""

    flag: str
    environment: str
    before: ClientFeatures
    after: ClientFeatures
    contexts: tuple[Mapping[str, Any], ...]
    from_traffic: int = 0  # of ``contexts``, those sampled; the rest were uploaded

    def scored(self) -> PreviewAnswer:
        """The preview (seconds for a large sample: the server runs it off its store thread)."""
        answer = preview_flag_change(
            self.before, self.after, self.flag, self.environment, self.contexts
        )
        uploaded = len(self.contexts) - self.from_traffic
        return attrs.evolve(answer, from_traffic=self.from_traffic, uploaded=uploaded)


def _under(prefix: str, error: FlagcoreError) -> FlagcoreError:
    """``error`` with its details' paths moved under ``prefix``: ``$.x`` becomes
    ``$.strategies[0].x``."""
    details = [
        ErrorDetail(d.message, prefix + d.path[1:] if d.path and d.path.startswith("$") else prefix)
        for d in error.details
    ]
    error.details = tuple(details) or (ErrorDetail(error.message, prefix),)
    return error


def _parsed(texts: Sequence[str]) -> tuple[Mapping[str, Any], ...]:
    """Each text parsed once, however often it was sampled (the same dict repeated)."""
    seen: dict[str, Mapping[str, Any]] = {}
    out = []
    for text in texts:
        context = seen.get(text)
        if context is None:
            context = seen[text] = json.loads(text)
        out.append(context)
    return tuple(out)


class Previews:
    """Previews of flag changes, and the context samples they are scored on."""

    def __init__(
        self, context: ServiceContext, *, client: ClientView, strategies: Strategies
    ) -> None:
        self._context = context
        self._client = client
        self._strategies = strategies

    # --- the preview ---

    def preview_change(
        self, project: str, environment: str, flag: str, change: ProposedChange
    ) -> PreviewAnswer:
        """What ``change`` would do to the environment's sampled contexts (nothing is
        written). Raises `NotFound` and `InvalidInput` as saving the change would."""
        return self.preview_input(project, environment, flag, change).scored()

    def preview_input(
        self, project: str, environment: str, flag: str, change: ProposedChange
    ) -> PreviewInput:
        """What `preview_change` scores: the change checked and the sample read in one
        transaction, then the project's snapshot as SDKs see it (`ClientView`, its own
        read, as the playground reads it)."""
        if change == ProposedChange():
            raise InvalidInput(
                "propose a change: enabled, strategies or variants",
                [ErrorDetail("nothing proposed", "$")],
            )
        with self._context.read() as tx:
            definition = active_flag(tx, project, flag)
            require_environment(tx, environment)
            strategies = None
            if change.strategies is not None:
                strategies = []
                for index, strategy in enumerate(change.strategies):
                    try:
                        strategies.append(
                            self._strategies.prepared_in(tx, definition, strategy, index)
                        )
                    except FlagcoreError as error:
                        raise _under(f"$.strategies[{index}]", error) from None
            segments = [
                segment
                for i in sorted({i for s in strategies or () for i in s.segments})
                if (segment := tx.get_segment(i)) is not None
            ]
            rows = tx.list_records(CONTEXT_SAMPLES, {"environment": environment})
            texts = [row.context for row in rows]
            from_traffic = sum(row.source == TRAFFIC for row in rows)
        if change.variants is not None:
            check_variants(change.variants, "$.variants")
        before = self._client.client_features(environment, projects=(project,))
        old_flag = next((f for f in before.features if f.name == flag), None)
        if old_flag is None:  # archived or moved between the two reads
            raise NotFound(f'there is no active flag named "{flag}" in project "{project}"')
        after = with_flag(before, _changed(old_flag, change, strategies), segments)
        return PreviewInput(flag, environment, before, after, _parsed(texts), from_traffic)

    # --- the samples ---

    def write_sampled_contexts(
        self,
        slots: Mapping[str, Mapping[int, tuple[str, dt.datetime]]],
        *,
        actor: Actor = SYSTEM,
    ) -> int:
        """Keep the traffic reservoir's taken slots, per environment, in one transaction;
        slots of an environment that does not exist are dropped. No event: this is
        traffic, and SDKs' revision must not move for it. Returns the rows written."""
        authorize(actor, "write_sampled_contexts")
        written = 0
        with self._context.store.transaction() as tx:
            for environment, taken in slots.items():
                if tx.get_environment(environment) is None:
                    continue
                for slot, (text, seen_at) in taken.items():
                    tx.save_record(
                        CONTEXT_SAMPLES, SampledContext(environment, TRAFFIC, slot, text, seen_at)
                    )
                    written += 1
        return written

    def replace_context_sample(
        self,
        environment: str,
        contexts: Sequence[Mapping[str, Any]],
        *,
        denied: Collection[str] = (),
        actor: Actor = SYSTEM,
    ) -> ContextSampleAnswer:
        """Make ``contexts`` the environment's uploaded sample, replacing the last upload
        (the traffic sample stays). Fields named in ``denied`` are left out, and said so."""
        actor = authorize(actor, "replace_context_sample", environment=environment)
        now = self._context.clock()
        dropped: dict[str, None] = {}
        kept = []
        for context in contexts:
            checked, names = without_denied(context, denied)
            dropped.update(dict.fromkeys(names))
            kept.append(context_text(checked))
        with self._context.unit() as tx:
            require_environment(tx, environment)
            for row in tx.list_records(
                CONTEXT_SAMPLES, {"environment": environment, "source": UPLOAD}
            ):
                tx.delete_record(CONTEXT_SAMPLES, (environment, UPLOAD, row.slot))
            for slot, text in enumerate(kept):
                tx.save_record(
                    CONTEXT_SAMPLES, SampledContext(environment, UPLOAD, slot, text, now)
                )
            self._context.record_event(
                tx,
                "context-sample-uploaded",
                actor,
                environment=environment,
                data=SampleUploadedData(len(kept), tuple(dropped)),
            )
        return ContextSampleAnswer(environment, len(kept), tuple(dropped))

    def sampled_contexts(self, environment: str) -> tuple[SampledContext, ...]:
        """The environment's sample as kept: traffic slots, then uploaded lines."""
        with self._context.read() as tx:
            return tuple(tx.list_records(CONTEXT_SAMPLES, {"environment": environment}))


def _changed(flag: Flag, change: ProposedChange, strategies: list[Strategy] | None) -> Flag:
    """``flag`` as SDKs would see it after ``change`` (disabled strategies left out)."""
    if change.enabled is not None:
        flag = attrs.evolve(flag, enabled=change.enabled)
    if strategies is not None:
        active = tuple(s for s in strategies if not s.disabled)
        flag = attrs.evolve(flag, strategies=active)
    if change.variants is not None:
        flag = attrs.evolve(flag, variants=variants_in_unleash_order(change.variants))
    return flag
