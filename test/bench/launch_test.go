package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestParseLaunchStep(t *testing.T) {
	for _, tc := range []struct {
		line string
		want launchStep
		ok   bool
	}{
		{"[  0.004s] node                 runtime        3ms      containerd 1.6.20 (CRI v1) at unix:///x", stepHandshake, true},
		{"[  0.041s] node                 network ready  2ms      mkl 10.89.1.0/24 via /x/10-mkl.conflist", stepNode, true},
		{"[  0.003s] bench-run/run-mkl-2 validated      1ms      uid 1234, qos BestEffort", "", false},
		{"[  0.090s] node                 cgroups        1ms      driver cgroupfs", "", false},
		{"handshake 1.9ms", stepHandshake, true},
		{"started 120ms", "", false},
		{"", "", false},
	} {
		got, ok := parseLaunchStep(tc.line)
		require.Equal(t, tc.ok, ok, tc.line)
		require.Equal(t, tc.want, got, tc.line)
	}
}

func TestLaunchRows(t *testing.T) {
	msd := func(xs ...int) []time.Duration {
		var out []time.Duration
		for _, x := range xs {
			out = append(out, time.Duration(x)*time.Millisecond)
		}
		return out
	}
	var raw, mkl launchRun
	raw.add(launchTimes{running: 100 * time.Millisecond, steps: map[launchStep]time.Duration{stepHandshake: 5 * time.Millisecond}, stopped: time.Second, cpu: 20 * time.Millisecond})
	raw.add(launchTimes{running: 120 * time.Millisecond, steps: map[launchStep]time.Duration{stepHandshake: 7 * time.Millisecond}, stopped: time.Second, cpu: 20 * time.Millisecond})
	mkl.add(launchTimes{running: 105 * time.Millisecond, steps: map[launchStep]time.Duration{stepHandshake: 15 * time.Millisecond, stepNode: 40 * time.Millisecond}, stopped: 2 * time.Second, cpu: 60 * time.Millisecond})
	mkl.add(launchTimes{running: 125 * time.Millisecond, steps: map[launchStep]time.Duration{stepHandshake: 17 * time.Millisecond, stepNode: 44 * time.Millisecond}, stopped: 2 * time.Second, cpu: 60 * time.Millisecond})
	require.Equal(t, msd(100, 120), raw.running)
	rows := launchRows(&raw, &mkl)
	require.Len(t, rows, 5)
	total := rows[0]
	require.Equal(t, "6 run launch", total.Scenario)
	require.InDelta(t, 115.0/110, total.Ratio, 1e-9)
	require.Equal(t, "≤ 1.10 × raw", total.Target)
	require.True(t, *total.Met)
	require.InDelta(t, 16.0, rows[1].Minikubelet.Median, 1e-9)
	require.InDelta(t, 6.0, rows[1].Raw.Median, 1e-9)
	require.Nil(t, rows[2].Raw, "node ready: minikubelet only")
	require.InDelta(t, 42.0, rows[2].Minikubelet.Median, 1e-9)
	require.InDelta(t, 2.0, rows[3].Ratio, 1e-9)
	require.InDelta(t, 3.0, rows[4].Ratio, 1e-9)
}
