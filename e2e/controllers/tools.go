//go:build tools

// The fleet's controllers but Kueue (e2e/kueue), KWOK and Helm, pinned by this module's go.mod and built from their own modules.
package controllers

import (
	_ "github.com/kubeflow/trainer/v2/cmd/trainer-controller-manager"
	_ "helm.sh/helm/v3/cmd/helm"
	_ "sigs.k8s.io/jobset"
	_ "sigs.k8s.io/kwok/cmd/kwok"
	_ "sigs.k8s.io/lws/cmd"
)
