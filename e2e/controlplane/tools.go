//go:build tools

// The control plane's binaries, pinned by this module's go.mod: `go build` of these paths builds them at
// exactly the k8s.io/kubernetes release below, with no prebuilt binary.
package controlplane

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
