//go:build !unix

package cni

import "errors"

// lockHostLocal: host-local runs on Linux only.
func lockHostLocal(string) (func(), error) {
	return nil, errors.New("host-local store lock: not supported on this OS")
}
