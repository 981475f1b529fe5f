"""The AWS clients preflight reads through, and the one place AWS API failures become findings.

Why, with sources: docs/commands.md, "Design notes", gpufleet/preflight/clients.py.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from gpufleet.preflight.findings import AccountFinding

Client = Any  # a boto3 client: generated at runtime, no type stubs are a dependency
T = TypeVar("T")

# Error codes that mean "these credentials do not work here"; every later call would fail the same way.
_CREDENTIAL_CODES = frozenset(
    {
        "AuthFailure",
        "ExpiredToken",
        "ExpiredTokenException",
        "InvalidClientTokenId",
        "RequestExpired",
        "SignatureDoesNotMatch",
        "UnrecognizedClientException",
    }
)
_DENIED_CODES = frozenset({"AccessDenied", "AccessDeniedException", "UnauthorizedOperation"})
_CONNECTION_ERRORS = (
    "EndpointConnectionError",
    "ConnectTimeoutError",
    "ReadTimeoutError",
    "ConnectionClosedError",
    "SSLError",
    "ProxyConnectionError",
)
_CREDENTIAL_ERRORS = (
    "NoCredentialsError",
    "PartialCredentialsError",
    "CredentialRetrievalError",
    "ProfileNotFound",
    "NoRegionError",
)

# Short: a describe call answers in well under a second; a silent endpoint should cost seconds, not minutes (botocore's
# defaults, 60 s each over 3 attempts, took 122 s).
CONNECT_TIMEOUT_S = 3.0
READ_TIMEOUT_S = 10.0
MAX_ATTEMPTS = 2
# Longest AWS error message shown: a parser error carries the whole response body.
_MESSAGE_LIMIT = 300

CREDENTIALS_FIX = (
    "configure credentials for the standard AWS chain (AWS_PROFILE, AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, "
    "or `aws sso login`); against a local emulator set AWS_ENDPOINT_URL and any dummy credentials"
)
CONNECTION_FIX = (
    "check network access to the AWS API (proxy, VPC endpoints); for a local emulator, check that "
    "AWS_ENDPOINT_URL points at one that is running"
)


@dataclass(frozen=True, slots=True)
class Clients:
    """The clients preflight uses; tests pass moto-backed or Stubber-backed ones.

    Why: docs/commands.md, "Design notes", clients.Clients."""

    ec2: Client
    service_quotas: Client
    ssm: Client
    reservations: Client | None = None
    # EKS, for the existing cluster's add-ons (DescribeAddon) and the add-on versions EKS offers
    # (DescribeAddonVersions); STS, for the deploying identity (GetCallerIdentity). None skips the checks that need
    # them; `make_clients` always builds both.
    eks: Client | None = None
    sts: Client | None = None

    @property
    def capacity_reservations(self) -> Client:
        return self.reservations if self.reservations is not None else self.ec2


class ApiError(Exception):
    """An AWS call failed. `fatal` means the remaining checks would fail the same way (credentials, network)."""

    def __init__(self, operation: str, code: str, message: str, *, fatal: bool) -> None:
        super().__init__(f"{operation}: {code}: {message}")
        self.operation = operation
        self.code = code
        self.message = message
        self.fatal = fatal

    @property
    def hint(self) -> str:
        if self.code in _CREDENTIAL_ERRORS or self.code in _CREDENTIAL_CODES:
            return CREDENTIALS_FIX
        if self.code in _CONNECTION_ERRORS:
            return CONNECTION_FIX
        if self.code == "ResponseParserError":
            return f"the endpoint answered with something that is not an AWS API response: {CONNECTION_FIX}"
        if self.code in _DENIED_CODES:
            return f"allow {self.operation} for the caller's IAM identity (preflight only reads)"
        return f"rerun once {self.operation} succeeds; see the AWS error for the cause"

    def finding(self) -> AccountFinding:
        return AccountFinding(
            severity="error",
            node_group=None,
            message=f"{self.operation} failed: {self.code}: {self.message}",
            hint=self.hint,
            scope="aws",
        )


def make_clients(region: str) -> Clients:
    """Clients for `region` from the standard AWS chain; raises ApiError when no session can be built."""

    def build() -> Clients:
        import boto3.session  # type: ignore[import-untyped,unused-ignore]
        from botocore.config import Config  # type: ignore[import-untyped,unused-ignore]

        session = boto3.session.Session(region_name=region)
        config = Config(
            retries={"max_attempts": MAX_ATTEMPTS, "mode": "standard"},
            connect_timeout=CONNECT_TIMEOUT_S,
            read_timeout=READ_TIMEOUT_S,
            user_agent_extra="gpufleet-preflight",
        )
        return Clients(
            ec2=session.client("ec2", config=config),
            service_quotas=session.client("service-quotas", config=config),
            ssm=session.client("ssm", config=config),
            eks=session.client("eks", config=config),
            sts=session.client("sts", config=config),
        )

    return _guarded("session:CreateClient", build)


def session_client(region: str, service: str) -> Client:
    """One client for `region` from the standard AWS chain, configured as preflight's (`gpufleet snapshot` uses it);
    raises ApiError when no session can be built."""

    def build() -> Client:
        import boto3.session  # type: ignore[import-untyped,unused-ignore]
        from botocore.config import Config  # type: ignore[import-untyped,unused-ignore]

        config = Config(
            retries={"max_attempts": MAX_ATTEMPTS, "mode": "standard"},
            connect_timeout=CONNECT_TIMEOUT_S,
            read_timeout=READ_TIMEOUT_S,
            user_agent_extra=f"gpufleet-{service}",
        )
        return boto3.session.Session(region_name=region).client(service, config=config)

    return _guarded("session:CreateClient", build)


def wait(client: Client, waiter: str, **params: Any) -> None:
    """Block on one of the client's waiters (`instance_stopped`, `snapshot_completed`); a failure, or running out of
    attempts, is raised as ApiError (botocore's WaiterError is a BotoCoreError)."""
    _guarded(
        f"{client.meta.service_model.signing_name}:wait:{waiter}", lambda: client.get_waiter(waiter).wait(**params)
    )


def _operation(client: Client, method: str) -> str:
    """`ec2:DescribeSubnets`: the IAM action of a client method, for messages and fixes."""
    meta = client.meta
    return f"{meta.service_model.signing_name}:{meta.method_to_api_mapping.get(method, method)}"


def call(client: Client, method: str, **params: Any) -> dict[str, Any]:
    """One API call; any failure is raised as ApiError."""
    result: dict[str, Any] = _guarded(_operation(client, method), lambda: getattr(client, method)(**params))
    return result


def paginate(client: Client, method: str, key: str, **params: Any) -> list[dict[str, Any]]:
    """Every item under `key` across the pages of a paginated call; failures are raised as ApiError."""

    def every_page() -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        for page in client.get_paginator(method).paginate(**params):
            items.extend(page.get(key, []))
        return items

    return _guarded(_operation(client, method), every_page)


def _guarded(operation: str, action: Callable[[], T]) -> T:
    from botocore.exceptions import BotoCoreError, ClientError  # type: ignore[import-untyped,unused-ignore]
    from botocore.parsers import ResponseParserError  # type: ignore[import-untyped,unused-ignore]

    try:
        return action()
    except ClientError as exc:
        error = exc.response.get("Error", {})
        code = str(error.get("Code") or "ClientError")
        message = str(error.get("Message") or exc)
        raise ApiError(operation, code, message, fatal=code in _CREDENTIAL_CODES) from None
    # No credentials, endpoint unreachable, timeouts, a bad profile -- and a body that is not an AWS response
    # (ResponseParserError is not a BotoCoreError): every later call would fail the same way.
    except (BotoCoreError, ResponseParserError) as exc:
        raise ApiError(operation, type(exc).__name__, _first_line(str(exc)), fatal=True) from None


def _first_line(message: str) -> str:
    line = message.strip().split("\n", 1)[0]
    return line if len(line) <= _MESSAGE_LIMIT else line[: _MESSAGE_LIMIT - 3] + "..."
