package reason

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestSplit(t *testing.T) {
	errPull := errors.New("ErrImagePull")
	err := New(errPull, "pull %q: %s", "reg/app:1", "not found")
	assert.ErrorIs(t, err, errPull)
	assert.EqualError(t, err, `ErrImagePull: pull "reg/app:1": not found`)
	r, m := Split(fmt.Errorf("start: %w", err))
	assert.Equal(t, "ErrImagePull", r, "found through wrapping")
	assert.Equal(t, `pull "reg/app:1": not found`, m)
	r, m = Split(errors.New("plain"))
	assert.Equal(t, "", r, "no reason")
	assert.Equal(t, "plain", m)
}
