"""Every test here runs against the real Keystone: marked `realkeystone`. The session's
one Keystone is the `real_keystone` fixture."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.realkeystone.served import RealKeystone, served_keystone

HERE = Path(__file__).parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark the tests of this directory realkeystone (select them with -m realkeystone)."""
    for item in items:
        if HERE in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.realkeystone)


@pytest.fixture(scope="session")
def real_keystone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealKeystone]:
    """The real Keystone, served for the whole session (one per pytest-xdist worker)."""
    with served_keystone(tmp_path_factory.mktemp("realkeystone")) as served:
        yield served
