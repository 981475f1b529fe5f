// Command etcd is the etcd server the cluster in a box stores its state in: etcd's own main
// (go.etcd.io/etcd/server/v3/etcdmain), at the version k8s.io/kubernetes pins, so no binary is downloaded.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
