package main

import (
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/require"
)

// The daemon collects garbage at GOGC=25 unless the user set GOGC.
func TestSetServeGC(t *testing.T) {
	for _, tc := range []struct {
		name string
		gogc string
		want int
	}{
		{name: "default", gogc: "", want: serveGCPercent},
		{name: "GOGC set by the user wins", gogc: "100", want: 77},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old := debug.SetGCPercent(77)
			defer debug.SetGCPercent(old)
			setServeGC(func(k string) string {
				if k == "GOGC" {
					return tc.gogc
				}
				return ""
			})
			require.Equal(t, tc.want, debug.SetGCPercent(77))
		})
	}
}
