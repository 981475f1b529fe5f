// The pulumi-kubernetes provider's main, as upstream's provider/cmd/pulumi-resource-kubernetes/main.go has it. Its
// two embedded files are what upstream's generate.go writes from the module's schema.json and
// terraform-mapping.json (the version set in the schema); e2e/box/build.py writes them here before the build, since
// the module cache is read-only and the module ships only their sources.
package main

import (
	_ "embed"

	"github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/provider"
	"github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/version"
)

var providerName = "kubernetes"

//go:embed schema-embed.json
var pulumiSchema []byte

//go:embed terraform-mapping-embed.json
var terraformMapping []byte

func main() {
	provider.Serve(providerName, version.Version, pulumiSchema, terraformMapping)
}
