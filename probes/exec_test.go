package probes_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/minikubelet/minikubelet/probes"
	"github.com/minikubelet/minikubelet/probes/probestest"
)

func TestExec(t *testing.T) {
	big := strings.Repeat("x", 8*1024)
	tests := []struct {
		name    string
		result  probestest.ExecResult
		want    probes.Result
		wantOut string
		wantErr bool
	}{
		{name: "exit 0", result: probestest.Exit(0, "ok\n"), want: probes.Success, wantOut: "ok\n"},
		{name: "exit 1 with output", result: probestest.ExecResult{Stdout: []byte("out "), Stderr: []byte("err"), Err: &probestest.ExitError{Code: 1}},
			want: probes.Failure, wantOut: "out err"},
		{name: "timeout", result: probestest.Timeout(), want: probes.Failure, wantOut: `command ["check"] timed out after 1s`},
		{name: "exec broke", result: probestest.ExecResult{Err: errors.New("container not found")}, want: probes.Unknown, wantErr: true},
		{name: "output cut at 10 KiB", result: probestest.ExecResult{Stdout: []byte(big), Stderr: []byte(big), Err: &probestest.ExitError{Code: 2}},
			want: probes.Failure, wantOut: big + big[:2*1024]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := probestest.NewFakeExecer()
			e.Script("c1", tt.result)
			res, out, err := probes.Exec(context.Background(), e, nil, "c1", []string{"check"}, time.Second)
			if tt.wantErr {
				require.Error(t, err)
			} else {
				require.NoError(t, err)
				assert.Equal(t, tt.wantOut, out)
			}
			assert.Equal(t, tt.want, res)
			assert.Equal(t, []probestest.ExecCall{{ContainerID: "c1", Cmd: []string{"check"}, Timeout: time.Second}}, e.Calls())
		})
	}
}

// criExitError and errCRITimeout have the shape of cri.ExitError and
// cri.ErrExecTimeout, which the default classifier does not know.
type criExitError struct{ ExitCode int32 }

func (e *criExitError) Error() string { return fmt.Sprintf("command exited with code %d", e.ExitCode) }

var errCRITimeout = errors.New("exec timed out")

func TestExec_CustomClassifier(t *testing.T) {
	classify := func(err error) (int, bool, bool) {
		var ee *criExitError
		if errors.As(err, &ee) {
			return int(ee.ExitCode), true, false
		}
		return 0, false, errors.Is(err, errCRITimeout)
	}
	e := probestest.NewFakeExecer()
	e.Script("c1",
		probestest.ExecResult{Stdout: []byte("bad"), Err: fmt.Errorf("exec: %w", &criExitError{ExitCode: 3})},
		probestest.ExecResult{Err: fmt.Errorf("command did not finish: %w", errCRITimeout)},
	)
	res, out, err := probes.Exec(context.Background(), e, classify, "c1", []string{"x"}, 2*time.Second)
	require.NoError(t, err)
	assert.Equal(t, probes.Failure, res)
	assert.Equal(t, "bad", out)

	res, out, err = probes.Exec(context.Background(), e, classify, "c1", []string{"x"}, 2*time.Second)
	require.NoError(t, err)
	assert.Equal(t, probes.Failure, res)
	assert.Contains(t, out, "timed out")
}
