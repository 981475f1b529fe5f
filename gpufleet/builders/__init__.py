"""Stage builders: one module per stage, each registering `@builder("<stage>")` with gpufleet.plan.

Importing this package registers all of them; gpufleet.plan imports it lazily."""

from gpufleet.builders import (  # noqa: F401
    admission,
    cost,
    foundation,
    health,
    network,
    sharing,
    storage,
    telemetry,
)
