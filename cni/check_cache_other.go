//go:build !linux

package cni

import "os"

// openNoFollow: the flags of the Linux build are not portable.
const openNoFollow = 0

// fileStamp is "" off Linux: every check runs the plugins, and no
// NetworkReady answer is reused (ReadyCache).
func fileStamp(os.FileInfo) string { return "" }
