package logrotate

import (
	"errors"
	"fmt"
	"time"
)

// The kubelet's defaults (KubeletConfiguration containerLogMaxSize,
// containerLogMaxFiles, and its 10 s monitoring period).
const (
	DefaultMaxSize  int64 = 10 << 20
	DefaultMaxFiles       = 5
	DefaultPeriod         = 10 * time.Second
)

// Config is the container log policy. Zero fields take the kubelet's
// defaults.
type Config struct {
	// MaxSize is the size in bytes above which a log is rotated (10 MiB).
	MaxSize int64
	// MaxFiles is how many files one container's log may span, the live one
	// included (5); at least 2.
	MaxFiles int
	// Period is how often logs are checked (10 s).
	Period time.Duration
}

// WithDefaults returns c with zero fields set to the kubelet's defaults.
func (c Config) WithDefaults() Config {
	if c.MaxSize == 0 {
		c.MaxSize = DefaultMaxSize
	}
	if c.MaxFiles == 0 {
		c.MaxFiles = DefaultMaxFiles
	}
	if c.Period == 0 {
		c.Period = DefaultPeriod
	}
	return c
}

// Validate refuses a policy the kubelet refuses too.
func (c Config) Validate() error {
	var errs []error
	if c.MaxSize < 0 {
		errs = append(errs, fmt.Errorf("container log max size %d: must be positive", c.MaxSize))
	}
	if c.MaxFiles < 2 && c.MaxFiles != 0 {
		errs = append(errs, fmt.Errorf("container log max files %d: must be at least 2 (the live file and one rotated)", c.MaxFiles))
	}
	if c.Period < 0 {
		errs = append(errs, fmt.Errorf("log rotation period %s: must be positive", c.Period))
	}
	return errors.Join(errs...)
}
