"""What a change between two synth trees does: resource changes, node groups replaced or rolled, running work,
quotas and cost, as text or Markdown."""
