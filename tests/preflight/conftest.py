"""Fixtures of the preflight tests; the helpers live in tests.preflight.support."""

from __future__ import annotations

import functools
from collections.abc import Iterator

import pytest

from tests.preflight.support import return_stubbed_clients, world  # noqa: F401  (world: the module-scoped moto world fixture)


@pytest.fixture(scope="package", autouse=True)
def one_model_loader() -> Iterator[None]:
    """Every botocore session of these tests shares one data loader per AWS_DATA_PATH.

    `make_clients` builds a new `boto3.session.Session` per call, and each session's loader re-reads and
    re-parses the service models (EC2's is several MB of JSON) and endpoint rules: a third of this directory's
    CPU. One CLI run builds one session, so only the tests pay for that; sharing the loader changes no
    answer, as one session already hands the same loaded models to all its clients
    (botocore.session.Session._register_data_loader calls botocore.loaders.create_loader)."""
    import botocore.session  # type: ignore[import-untyped,unused-ignore]

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(botocore.session, "create_loader", functools.cache(botocore.session.create_loader))
        yield


@pytest.fixture(autouse=True)
def stubbed_clients_go_back() -> Iterator[None]:
    """The clients a test borrowed through `stubbed` lose their Stubbers and serve the next test."""
    yield
    return_stubbed_clients()
