"""`ClientCache`'s payload policy, which the SDK route relies on: a payload is rendered once
per revision and key however many polls ask at once, served only at the revision it was
rendered for, and not kept when a change landed while it rendered."""

from __future__ import annotations

import asyncio

from flagcore_http.client_cache import ClientCache, RenderedPayload

KEY = ("development", None, (), None, 2)


def payload(text: str) -> RenderedPayload:
    return RenderedPayload(text.encode(), f'"{text}"')


async def test_polls_asking_at_once_share_one_render_and_later_ones_find_it_kept() -> None:
    cache = ClientCache()
    cache.sync(7)
    renders: list[int] = []
    release = asyncio.Event()

    async def render() -> RenderedPayload:
        renders.append(7)
        await release.wait()
        return payload("seven")

    waiting = [asyncio.ensure_future(cache.payload(KEY, 7, render)) for _ in range(5)]
    await asyncio.sleep(0)
    release.set()
    answers = await asyncio.gather(*waiting)
    assert renders == [7]
    assert {a.body for a in answers} == {b"seven"}
    assert cache.payload_at(KEY, 7) is answers[0]
    cache.close()


async def test_a_payload_is_not_served_at_another_revision() -> None:
    cache = ClientCache()
    cache.sync(7)

    async def render() -> RenderedPayload:
        return payload("seven")

    await cache.payload(KEY, 7, render)
    cache.sync(8)
    assert cache.payload_at(KEY, 8) is None
    assert cache.payload_at(KEY, 7) is None  # the older revision's payloads are gone
    cache.close()


async def test_a_payload_rendered_while_a_change_landed_answers_its_poll_but_is_not_kept() -> None:
    cache = ClientCache()
    cache.sync(7)

    async def render_while_changing() -> RenderedPayload:
        cache.sync(8)  # a write committed while the payload of revision 7 was made
        return payload("seven")

    answer = await cache.payload(KEY, 7, render_while_changing)
    assert answer.body == b"seven"
    assert cache.payload_at(KEY, 8) is None
    assert len(cache.payloads) == 0
    cache.close()
