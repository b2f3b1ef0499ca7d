package agent

// Container log rotation (package agent/logrotate): the engine tells it
// which containers are its own (the relister's label and test) and hands
// it the runtime and the clock; the daemon runs it (RunLogRotation).

import (
	"github.com/minikubelet/minikubelet/agent/logrotate"
)

// LogRotationConfig is the container log policy (logrotate.Config).
type LogRotationConfig = logrotate.Config

// newLogRotator is a rotator of this agent's running containers.
func (a *Agent) newLogRotator() *logrotate.Rotator {
	return logrotate.New(logrotate.Options{
		Runtime:        a.runtime,
		Selector:       relistSelector(),
		Owns:           a.relistOwns,
		Clock:          a.clock,
		Logger:         a.logger.With("component", "log-rotation"),
		RuntimeTimeout: a.cfg.RuntimeTimeout,
	})
}
