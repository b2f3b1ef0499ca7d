//go:build !linux

package agent

import "errors"

func makeRShared(string) error { return errors.New("mount propagation needs Linux") }

func unmountUnder(string) error { return nil }
