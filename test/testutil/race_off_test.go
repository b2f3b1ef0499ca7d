//go:build !race

package testutil

// raceBuild: see race_on_test.go.
const raceBuild = false
