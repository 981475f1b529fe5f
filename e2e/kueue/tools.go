//go:build tools

// Kueue, built from its own module with the dependency versions its release's go.mod names.
package kueue

import (
	_ "sigs.k8s.io/kueue/cmd/kueue"
)
