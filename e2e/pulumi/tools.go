//go:build tools

// The Pulumi CLI and engine, pinned by this module's go.mod: `go build` of this path builds the `pulumi` command at
// exactly the github.com/pulumi/pulumi/pkg/v3 release below, with no prebuilt binary.
package pulumi

import (
	_ "github.com/pulumi/pulumi/pkg/v3/cmd/pulumi"
)
