"""The client-features payload has two writers: the server's hand-written fast one
(`unstructure_client_features`, then the echoed query and meta added, as
`flagcore_http.routes.client` does per render) and the one the answer table derives
from `ClientFeaturesAnswer`'s rows, whose schema is the published contract. They must
write the same bytes, for every state of Unleash's client specification, in both
formats."""

from __future__ import annotations

import json
from typing import Any

import pytest

from flagcore.model import ClientFeatures
from flagcore.wire import (
    ClientFeaturesAnswer,
    PayloadMeta,
    read_client_features,
    unstructure_client_features,
    write_answer,
)
from tests.conftest import client_spec_dir


def _states() -> list[Any]:
    specs = client_spec_dir() / "specifications"
    names = json.loads((specs / "index.json").read_text(encoding="utf-8"))
    return [
        pytest.param(json.loads((specs / name).read_text(encoding="utf-8"))["state"], id=name)
        for name in names
    ]


def _fast(snapshot: ClientFeatures, version: int, query: dict[str, Any], meta: PayloadMeta) -> str:
    payload = unstructure_client_features(snapshot, version=version)
    payload["query"] = query
    payload["meta"] = {
        "revisionId": meta.revision_id,
        "etag": meta.etag,
        "queryHash": meta.query_hash,
    }
    return json.dumps(payload, separators=(",", ":"), ensure_ascii=False)


def _derived(
    snapshot: ClientFeatures, version: int, query: dict[str, Any], meta: PayloadMeta
) -> str:
    answer = ClientFeaturesAnswer.of(snapshot, version, query, meta)
    return json.dumps(write_answer(answer), separators=(",", ":"), ensure_ascii=False)


@pytest.mark.parametrize("version", [1, 2])
@pytest.mark.parametrize("state", _states())
def test_the_fast_writer_writes_what_the_answer_table_derives(
    state: dict[str, Any], version: int
) -> None:
    snapshot = read_client_features(state).snapshot
    assert snapshot.features
    query = {"environment": "development", "inlineSegmentConstraints": version < 2}
    meta = PayloadMeta(41, '"0123abcd:41:v1"', "0123abcd")
    fast = _fast(snapshot, version, query, meta)
    assert fast == _derived(snapshot, version, query, meta)
    assert json.loads(fast)["version"] == version


def test_an_empty_payload_that_matches_nothing_is_written_alike() -> None:
    query = {"environment": "production", "inlineSegmentConstraints": False, "matchesNothing": True}
    meta = PayloadMeta(0, '"x:0:v1"', "x")
    assert _fast(ClientFeatures(), 2, query, meta) == _derived(ClientFeatures(), 2, query, meta)
