"""The fleet spec: YAML with the position of every value, the JSON Schema, environment overrides, the typed frozen
model, the defaults that depend on the rest of the spec, and the figures derived from it."""
