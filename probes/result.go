package probes

import (
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
)

// Result is the outcome of one probe run, or a worker's cached result.
//
// Handlers return all four values. The cached results a Manager keeps are
// only Unknown, Success and Failure: a Warning run counts as Success and an
// Unknown run as Failure (kubelet prober.go).
type Result int

const (
	// Unknown: not probed yet (the startup probe's initial result), or a
	// handler that could not tell.
	Unknown Result = iota
	// Success: the check passed.
	Success
	// Failure: the check ran and the container is unhealthy.
	Failure
	// Warning: the check passed with a remark (an HTTP redirect to another
	// host was not followed); it counts as Success.
	Warning
)

// String returns the lower-case name, as in kubelet logs ("success").
func (r Result) String() string {
	switch r {
	case Unknown:
		return "unknown"
	case Success:
		return "success"
	case Failure:
		return "failure"
	case Warning:
		return "warning"
	}
	return fmt.Sprintf("Result(%d)", int(r))
}

// cached maps a run's result to what a worker counts and stores.
func (r Result) cached() Result {
	switch r {
	case Success, Warning:
		return Success
	default:
		return Failure
	}
}

// Kind is the probe type: liveness, readiness or startup.
type Kind int

const (
	// Liveness probes restart the container when they fail.
	Liveness Kind = iota
	// Readiness probes drive the container's ready flag.
	Readiness
	// Startup probes gate the other two and kill a container that never
	// starts.
	Startup
)

// kinds lists every Kind, in the order workers are started.
var kinds = [...]Kind{Liveness, Readiness, Startup}

// String returns "Liveness", "Readiness" or "Startup", the word kubelet
// events start with ("Liveness probe failed: ...").
func (k Kind) String() string {
	switch k {
	case Liveness:
		return "Liveness"
	case Readiness:
		return "Readiness"
	case Startup:
		return "Startup"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// initialResult is the cached result of a new worker (kubelet-facts §4.2).
func (k Kind) initialResult() Result {
	switch k {
	case Readiness:
		return Failure
	case Liveness:
		return Success
	default:
		return Unknown
	}
}

// probeOf returns the container's probe of kind k, or nil.
func probeOf(c *v1.Container, k Kind) *v1.Probe {
	switch k {
	case Liveness:
		return c.LivenessProbe
	case Readiness:
		return c.ReadinessProbe
	case Startup:
		return c.StartupProbe
	}
	return nil
}

// Defaults of the Probe fields, applied here as well as in agent/defaults.go
// so that a zero field never means "probe continuously" (kubelet-facts §4.1).
const (
	defaultTimeout          = 1 * time.Second
	defaultPeriod           = 10 * time.Second
	defaultSuccessThreshold = 1
	defaultFailureThreshold = 3
)

// timing is a probe's schedule and thresholds with defaults applied.
type timing struct {
	initialDelay     time.Duration
	period           time.Duration
	timeout          time.Duration
	successThreshold int
	failureThreshold int
}

// timingOf reads p's schedule, defaulting unset (zero or negative) fields.
func timingOf(p *v1.Probe) timing {
	t := timing{
		initialDelay:     time.Duration(max(p.InitialDelaySeconds, 0)) * time.Second,
		period:           time.Duration(p.PeriodSeconds) * time.Second,
		timeout:          time.Duration(p.TimeoutSeconds) * time.Second,
		successThreshold: int(p.SuccessThreshold),
		failureThreshold: int(p.FailureThreshold),
	}
	if t.period <= 0 {
		t.period = defaultPeriod
	}
	if t.timeout <= 0 {
		t.timeout = defaultTimeout
	}
	if t.successThreshold <= 0 {
		t.successThreshold = defaultSuccessThreshold
	}
	if t.failureThreshold <= 0 {
		t.failureThreshold = defaultFailureThreshold
	}
	return t
}
