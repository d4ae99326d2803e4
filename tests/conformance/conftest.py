"""Fixtures of the conformance suite: ``face`` runs a test once per face of
txnq (``sync``, ``aio``); ``client`` is that face's client on the test's own
database. ``@drift(face, reason)`` marks a known difference between the
faces: the test stays as it should be and is an expected failure (strict:
once the faces agree, it fails until the mark is removed) for that face only.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from faces import FACES, AsyncFace, SyncFace


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "drift(face, reason): a known difference of that face (sync or aio) from the "
        "other: an expected failure there (strict), to remove once the faces agree",
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        callspec = getattr(item, "callspec", None)
        face = None if callspec is None else callspec.params.get("face")
        for mark in item.iter_markers("drift"):
            if mark.kwargs["face"] == face:
                strict = not mark.kwargs.get("racy", False)
                item.add_marker(
                    pytest.mark.xfail(strict=strict, reason=f"drift: {mark.kwargs['reason']}")
                )


@pytest.fixture(params=sorted(FACES))
def face(request: pytest.FixtureRequest, dsn: str) -> Iterator[SyncFace | AsyncFace]:
    """One face of txnq (the test runs once per face), closed afterwards."""
    opened = FACES[request.param]()
    try:
        yield opened
    finally:
        opened.close()


@pytest.fixture
def client(face: SyncFace | AsyncFace, dsn: str) -> Any:
    """The face's client on the test's own database."""
    return face.client(dsn)


@pytest.fixture
def topic(client: Any) -> Callable[..., str]:
    """``topic(name, partitions=1, **policy)``: create a topic, return its name."""

    def create(name: str, partitions: int = 1, **policy: Any) -> str:
        client.admin.create_topic(name, partitions, **policy)
        return name

    return create
