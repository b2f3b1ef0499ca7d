package cgroupv2

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The host's view of a guest run (testdata/guest-output.txt is real
// -test.v=test2json output of three parallel tests): a passed case with a
// subtest, a failed one, and one the test timeout cut off, which must not
// count as passed; the timeout panic is kept.
func TestParseGuestOutput(t *testing.T) {
	raw, err := os.ReadFile("testdata/guest-output.txt")
	require.NoError(t, err)
	cases, outside := parseGuestOutput(t, raw)
	require.Len(t, cases, 3)
	got := map[string]string{}
	for _, c := range cases {
		got[c.name] = c.action
	}
	assert.Equal(t, map[string]string{"TestA": "pass", "TestB": "fail", "TestC": ""}, got)
	assert.Contains(t, cases[0].output.String(), "hello from sub", "subtest output folded into its case")
	assert.Contains(t, cases[1].output.String(), "x_test.go:12: boom")
	assert.InDelta(t, 0.1, cases[1].elapsed, 0.001)
	assert.Contains(t, outside, "panic: test timed out after 2s")
}
