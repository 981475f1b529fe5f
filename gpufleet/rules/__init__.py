"""Cross-field rules over the typed spec, and the one way in: file -> parse -> schema -> typed Fleet -> rules."""
