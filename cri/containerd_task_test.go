package cri

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestIsStuckTask(t *testing.T) {
	stuck := status.Error(codes.FailedPrecondition, `failed to delete containerd container "abc": cannot delete running task abc: failed precondition`)
	for name, tc := range map[string]struct {
		err  error
		want bool
	}{
		"containerd's refusal":           {stuck, true},
		"wrapped by the agent":           {fmt.Errorf("remove container web: %w", stuck), true},
		"the CRI's own running refusal":  {status.Error(codes.FailedPrecondition, `container "abc" is running, please stop it first`), false},
		"same words, another code":       {status.Error(codes.Unknown, "cannot delete running task abc"), false},
		"a plain error with those words": {errors.New("cannot delete running task"), false},
		"nil":                            {nil, false},
	} {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, tc.want, IsStuckTask(tc.err))
		})
	}
}

// A runtime client that cannot reach containerd's task service (a fake, or
// another CRI runtime) answers Unimplemented through the decorator, which
// the agent treats as "no remedy": the removal error stands.
func TestInstrumented_RemoveStuckTaskUnimplemented(t *testing.T) {
	x := Instrument(nil, nil, nil)
	err := x.RemoveStuckTask(context.Background(), "abc")
	assert.True(t, IsUnimplemented(err), "%v", err)
	assert.Equal(t, 1, x.Stats()["RemoveStuckTask"].Errors)
}
