//go:build !linux

package cni

import "os"

// openNoFollow: the flags of the Linux build are not portable.
const openNoFollow = 0

// pluginStamp is "" off Linux: every check runs the plugins.
func pluginStamp(os.FileInfo) string { return "" }
