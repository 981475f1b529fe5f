"""Stage builders: one module per stage, each registering `@builder("<stage>")` with gpufleet.plan.

`gpufleet.builders.registry` imports all of them; gpufleet.plan imports it lazily. This package's own import
stays empty so manifests can use `gpufleet.builders.common` without import cycles."""
