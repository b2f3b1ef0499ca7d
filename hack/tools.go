//go:build tools

// Package hack pins the versions of tools that the setup scripts build from
// source with `go build`, so that go.mod is the single place their versions
// are chosen: the CNI plugins that containerd calls for every pod sandbox.
package hack

import (
	_ "github.com/containernetworking/plugins/plugins/ipam/host-local"
	_ "github.com/containernetworking/plugins/plugins/main/bridge"
	_ "github.com/containernetworking/plugins/plugins/main/loopback"
	_ "github.com/containernetworking/plugins/plugins/meta/portmap"
)
