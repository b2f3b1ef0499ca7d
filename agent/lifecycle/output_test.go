package lifecycle

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
)

// Issue #29, finding 2: a hook's output is bounded wherever it goes.
func TestBoundedOutput(t *testing.T) {
	out := BoundedOutput([]byte(strings.Repeat("é", 8<<20)), []byte("stderr"), MaxHookOutput)
	assert.LessOrEqual(t, len(out), MaxHookOutput)
	assert.Greater(t, len(out), MaxHookOutput-utf8.UTFMax)
	assert.True(t, utf8.ValidString(out))
	assert.Equal(t, "outerr", BoundedOutput([]byte("out"), []byte("err"), MaxHookOutput), "stdout, then stderr")
	assert.Equal(t, "ab", BoundedOutput([]byte("a"), []byte("bcd"), 2))
}
