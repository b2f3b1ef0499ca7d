//go:build race

package testutil

// raceBuild: these tests were built with -race, so the test binaries they
// build use it too (and reuse what the run compiled).
const raceBuild = true
