"""What the mock monitor is asked: the engine's view of a program run under mocks."""

from __future__ import annotations

from typing import Any

import pytest
from pulumi.runtime import mocks as pulumi_mocks


def dependencies_asked(monkeypatch: pytest.MonkeyPatch) -> dict[str, set[str]]:
    """From now on, each registration's request records its `dependencies` (as resource names) here, by the
    resource's name; the root stack is left out."""
    asked: dict[str, set[str]] = {}
    register = pulumi_mocks.MockMonitor.RegisterResource

    def on_register(monitor: Any, request: Any) -> Any:
        if request.type != "pulumi:pulumi:Stack":
            asked[request.name] = {urn.rsplit("::", 1)[1] for urn in request.dependencies}
        return register(monitor, request)

    monkeypatch.setattr(pulumi_mocks.MockMonitor, "RegisterResource", on_register)
    return asked
