"""Fixtures of the preflight tests; the helpers live in tests.preflight.support."""

from tests.preflight.support import world  # noqa: F401  (the module-scoped moto world fixture)
