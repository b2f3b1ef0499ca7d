package volume

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestTokenNeedsRefresh(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name    string
		age     time.Duration
		ttl     time.Duration
		refresh bool
	}{
		{"fresh", time.Minute, time.Hour, false},
		{"just under 80 %", 47*time.Minute + 59*time.Second, time.Hour, false},
		{"at 80 %", 48 * time.Minute, time.Hour, true},
		{"expired", 2 * time.Hour, time.Hour, true},
		{"a year-long token after 24 h", 24 * time.Hour, 365 * 24 * time.Hour, true},
		{"a year-long token after 23 h", 23 * time.Hour, 365 * 24 * time.Hour, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.refresh, TokenNeedsRefresh(t0.Add(tc.age), t0, t0.Add(tc.ttl)))
		})
	}
}
