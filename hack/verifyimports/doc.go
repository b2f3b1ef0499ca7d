// Package verifyimports holds the test of hack/verify-imports.sh: the
// script is fed throw-away modules, each with one import against the
// directions it enforces, and must fail on each and pass on a clean one.
// The real tree is never modified.
package verifyimports
