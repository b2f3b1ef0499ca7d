package probes

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestManagerAlign(t *testing.T) {
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name   string
		slot   time.Duration
		offset time.Duration
		in     time.Time
		want   time.Time
	}{
		{name: "on a slot", slot: 100 * time.Millisecond, in: base.Add(300 * time.Millisecond), want: base.Add(300 * time.Millisecond)},
		{name: "just after a slot", slot: 100 * time.Millisecond, in: base.Add(time.Nanosecond), want: base.Add(100 * time.Millisecond)},
		{name: "just before a slot", slot: 100 * time.Millisecond, in: base.Add(99 * time.Millisecond), want: base.Add(100 * time.Millisecond)},
		{name: "slots of a second", slot: time.Second, in: base.Add(1001 * time.Millisecond), want: base.Add(2 * time.Second)},
		{name: "no slots", slot: 0, in: base.Add(37 * time.Millisecond), want: base.Add(37 * time.Millisecond)},
		{name: "offset grid, before the offset", slot: time.Second, offset: 420 * time.Millisecond,
			in: base.Add(100 * time.Millisecond), want: base.Add(420 * time.Millisecond)},
		{name: "offset grid, on it", slot: time.Second, offset: 420 * time.Millisecond,
			in: base.Add(1420 * time.Millisecond), want: base.Add(1420 * time.Millisecond)},
		{name: "offset grid, after the offset", slot: time.Second, offset: 420 * time.Millisecond,
			in: base.Add(500 * time.Millisecond), want: base.Add(1420 * time.Millisecond)},
		{name: "before 1970", slot: 100 * time.Millisecond, in: time.Date(1960, 1, 1, 0, 0, 0, 50e6, time.UTC),
			want: time.Date(1960, 1, 1, 0, 0, 0, 100e6, time.UTC)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := &Manager{slot: tt.slot, slotOffset: tt.offset}
			assert.True(t, tt.want.Equal(m.align(tt.in)), "align(%s) = %s, want %s", tt.in, m.align(tt.in), tt.want)
		})
	}
}

// A real clock's reading keeps its monotonic part, so waits computed from it
// are immune to wall-clock steps.
func TestManagerAlign_KeepsMonotonicReading(t *testing.T) {
	m := &Manager{slot: scheduleSlot, slotOffset: scheduleSlot / 3}
	now := time.Now()
	a := m.align(now)
	assert.Contains(t, a.String(), "m=+", "monotonic reading dropped")
	assert.Less(t, a.Sub(now), scheduleSlot)
	assert.GreaterOrEqual(t, a.Sub(now), time.Duration(0))
}
