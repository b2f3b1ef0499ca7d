package main

import (
	"errors"
	"flag"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/minikubelet/minikubelet/agent/gc"
)

// The GC flags default to the kubelet's and refuse what the kubelet
// refuses, as usage errors.
func TestGCFlags(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		wantErr string
		check   func(t *testing.T, f gcFlags)
	}{
		{name: "kubelet defaults", check: func(t *testing.T, f gcFlags) {
			assert.Equal(t, gc.DefaultImagePolicy(), f.policy)
			assert.Equal(t, 5*time.Minute, f.imageGCPeriod)
			assert.Equal(t, time.Minute, f.containerPeriod)
		}},
		{name: "all set", args: []string{"--image-gc-high-threshold=90", "--image-gc-low-threshold=70", "--image-minimum-gc-age=1m", "--image-maximum-gc-age=720h", "--image-gc-period=30s", "--container-gc-period=10s"},
			check: func(t *testing.T, f gcFlags) {
				assert.Equal(t, gc.ImagePolicy{HighThresholdPercent: 90, LowThresholdPercent: 70, MinAge: time.Minute, MaxAge: 720 * time.Hour}, f.policy)
			}},
		{name: "low above high", args: []string{"--image-gc-high-threshold=70", "--image-gc-low-threshold=80"}, wantErr: "must be below the high threshold"},
		{name: "high above 100", args: []string{"--image-gc-high-threshold=101"}, wantErr: "between 0 and 100"},
		{name: "max age below min age", args: []string{"--image-maximum-gc-age=1m"}, wantErr: "above the minimum age"},
		{name: "zero period", args: []string{"--container-gc-period=0s"}, wantErr: "must be positive"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := flag.NewFlagSet("serve", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			var f gcFlags
			f.register(fs)
			require.NoError(t, fs.Parse(tc.args))
			err := f.validate()
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				var ee *exitError
				require.True(t, errors.As(err, &ee))
				assert.Equal(t, 2, ee.code)
				return
			}
			require.NoError(t, err)
			tc.check(t, f)
		})
	}
}
