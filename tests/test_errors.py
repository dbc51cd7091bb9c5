"""One error tree: every error kubemedic raises on purpose is a ``KubemedicError``, and what
the user supplied wrong is an ``InputError`` (the command line's exit status 2)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from lightkube import AsyncClient
from lightkube.config.kubeconfig import KubeConfig

from kubemedic.config import ConfigError
from kubemedic.errors import DurationError, InputError, KubemedicError
from kubemedic.incidents.archive import ArchiveDataError
from kubemedic.kube.api import (
    Api,
    ApiError,
    Conflict,
    ConnectionLost,
    Forbidden,
    Gone,
    NotFound,
    ServiceUnavailable,
    TooManyRequests,
    Unauthorized,
)
from kubemedic.kube.clock import ClockError
from kubemedic.kube.config import KubeAccessError
from kubemedic.kube.leader import LeaseError
from kubemedic.model.fieldpaths import FieldPathError
from kubemedic.model.managedfields import ManagedFieldsError
from kubemedic.model.quantities import QuantityError
from kubemedic.sim.apiserver import kubeconfig
from kubemedic.snapshot.loading import SnapshotError
from kubemedic.store.db import ArchiveError
from tests.sim.conftest import Running, start_emulator

INPUT_ERRORS: list[type[Exception]] = [
    DurationError,
    SnapshotError,
    ConfigError,
    QuantityError,
    FieldPathError,
    ManagedFieldsError,
    ArchiveError,
    ArchiveDataError,
    KubeAccessError,
]
OTHER_ERRORS: list[type[Exception]] = [
    ClockError,
    LeaseError,
    ApiError,
    ConnectionLost,
]
VALUE_ERRORS: list[type[Exception]] = [
    DurationError,
    QuantityError,
    FieldPathError,
    ManagedFieldsError,
    ArchiveDataError,
    LeaseError,
]


def test_the_roots() -> None:
    assert issubclass(InputError, KubemedicError)
    assert issubclass(KubemedicError, Exception)
    assert not issubclass(KubemedicError, ValueError)


@pytest.mark.parametrize("error", INPUT_ERRORS, ids=lambda e: e.__name__)
def test_input_errors(error: type[Exception]) -> None:
    assert issubclass(error, InputError)
    assert issubclass(error, KubemedicError)


@pytest.mark.parametrize("error", OTHER_ERRORS, ids=lambda e: e.__name__)
def test_errors_that_are_not_the_users(error: type[Exception]) -> None:
    assert issubclass(error, KubemedicError)
    assert not issubclass(error, InputError)


@pytest.mark.parametrize("error", VALUE_ERRORS, ids=lambda e: e.__name__)
def test_value_errors_stay_value_errors(error: type[Exception]) -> None:
    """``except ValueError`` around a parse still catches them."""
    assert issubclass(error, ValueError)


def test_messages_are_unchanged() -> None:
    assert str(QuantityError("'5x' is not a quantity")) == "'5x' is not a quantity"
    path_error = FieldPathError("unexpected end", text="f:a.", position=4)
    assert str(path_error) == "unexpected end at position 4 in field path 'f:a.'"


@pytest.mark.parametrize(
    ("code", "kind"),
    [
        (401, Unauthorized),
        (403, Forbidden),
        (404, NotFound),
        (409, Conflict),
        (410, Gone),
        (429, TooManyRequests),
        (503, ServiceUnavailable),
    ],
)
def test_from_status_picks_the_subclass(code: int, kind: type[ApiError]) -> None:
    error = ApiError.from_status(code, reason="Why", message="what", path="/api/v1/pods")
    assert type(error) is kind
    assert error.code == code
    assert (error.reason, error.message, error.path) == ("Why", "what", "/api/v1/pods")
    assert str(error) == f"/api/v1/pods: HTTP {code} Why: what"


@pytest.mark.parametrize("code", [400, 422, 500, 504])
def test_from_status_other_codes_are_plain(code: int) -> None:
    assert type(ApiError.from_status(code)) is ApiError


def test_subclasses_know_their_status() -> None:
    assert NotFound().code == 404
    assert Gone(path="/x").code == 410
    with pytest.raises(TypeError):
        ApiError()


def test_retryable() -> None:
    assert ApiError.from_status(429, retry_after=3).retryable
    assert ApiError.from_status(500).retryable
    assert ApiError.from_status(503).retryable
    assert not ApiError.from_status(404).retryable
    assert not ApiError.from_status(410).retryable


@pytest.fixture
def emulator(tmp_path: Path) -> Iterator[Running]:
    yield from start_emulator(tmp_path)


LEASES = "/apis/coordination.k8s.io/v1/namespaces/default/leases"


def test_the_live_client_raises_conflict_and_not_found(emulator: Running) -> None:
    """The emulator's 409 (a Lease created twice) and 404 come out of ``Api`` as ``Conflict``
    and ``NotFound``, each still an ``ApiError`` with the server's Status."""
    lease = {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": "twice", "namespace": "default"},
        "spec": {"holderIdentity": "a"},
    }

    async def scenario() -> tuple[ApiError, ApiError]:
        api = Api(AsyncClient(config=KubeConfig.from_dict(kubeconfig(emulator.url))))
        try:
            await api.request("POST", LEASES, body=lease)
            with pytest.raises(Conflict) as conflict:
                await api.request("POST", LEASES, body=lease)
            with pytest.raises(NotFound) as missing:
                await api.request("GET", f"{LEASES}/nobody")
            return conflict.value, missing.value
        finally:
            await api.close()

    conflict, missing = asyncio.run(scenario())
    assert conflict.code == 409
    assert conflict.reason == "AlreadyExists"
    assert conflict.path == LEASES
    assert missing.code == 404
    assert missing.reason == "NotFound"
