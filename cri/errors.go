package cri

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// This file is the only place in minikubelet that looks at gRPC status codes
// (house style rule 7). Everything else classifies CRI errors with the
// predicates below, which see through fmt.Errorf("...: %w") wrapping.
//
// cri-api's testing fakes report missing objects with plain fmt.Errorf
// strings ("container %q not found") that carry no gRPC status; IsNotFound
// deliberately does not guess from message text (a registry's "not found"
// inside a PullImage failure is not a missing CRI object). critest translates
// those fake errors into codes.NotFound instead, as containerd does.

// ErrExecTimeout is wrapped by the error ExecSync returns when the command did
// not finish within its timeout.
var ErrExecTimeout = errors.New("exec timed out")

// ExitError is returned by ExecSync when the command ran but exited non-zero.
// Stdout and stderr are still returned alongside it.
type ExitError struct {
	// ExitCode is the command's exit status as reported by the runtime.
	ExitCode int32
}

// Error implements error.
func (e *ExitError) Error() string {
	return fmt.Sprintf("command exited with code %d", e.ExitCode)
}

// ClassifyExecError reads an ExecSync error for the prober
// (probes.Config.ClassifyExecError): the command's non-zero exit code, or
// whether it timed out.
func ClassifyExecError(err error) (exitCode int, isExit, isTimeout bool) {
	var ee *ExitError
	if errors.As(err, &ee) {
		return int(ee.ExitCode), true, false
	}
	return 0, false, errors.Is(err, ErrExecTimeout)
}

// grpcStatuser is implemented by the errors grpc-go returns (and by
// status.Error), wrapped or not.
type grpcStatuser interface{ GRPCStatus() *status.Status }

// codeOf returns the gRPC code carried anywhere in err's chain, codes.OK for
// nil and codes.Unknown when no status is found.
func codeOf(err error) codes.Code {
	if err == nil {
		return codes.OK
	}
	var gs grpcStatuser
	if errors.As(err, &gs) {
		if s := gs.GRPCStatus(); s != nil {
			return s.Code()
		}
	}
	return codes.Unknown
}

// codeName is codeOf as a string for logs ("OK", "NotFound", ...).
func codeName(err error) string {
	return codeOf(err).String()
}

// IsNotFound reports whether err says the sandbox, container or image named
// in the call does not exist.
func IsNotFound(err error) bool {
	return codeOf(err) == codes.NotFound
}

// IsUnavailable reports whether err means the runtime could not be reached
// (socket missing, connection refused or dropped): the runtime is down,
// not the request wrong.
func IsUnavailable(err error) bool {
	return codeOf(err) == codes.Unavailable
}

// IsDeadlineExceeded reports whether err is a timeout, either the gRPC
// DeadlineExceeded code or a plain context.DeadlineExceeded.
func IsDeadlineExceeded(err error) bool {
	return codeOf(err) == codes.DeadlineExceeded || errors.Is(err, context.DeadlineExceeded)
}

// isUnimplemented reports whether the runtime does not serve the called
// method or service at all.
// IsUnimplemented reports whether the runtime does not implement the call
// (e.g. GetContainerEvents on containerd 1.6).
func IsUnimplemented(err error) bool { return isUnimplemented(err) }

func isUnimplemented(err error) bool {
	return codeOf(err) == codes.Unimplemented
}

// Message returns the runtime's own human-readable message from err, without
// grpc-go's "rpc error: code = ... desc = " prefix and without the context
// added by wrapping, e.g. a registry's reason for a failed pull. Errors that
// carry no gRPC status are returned as err.Error(); nil gives "".
func Message(err error) string {
	if err == nil {
		return ""
	}
	var gs grpcStatuser
	if errors.As(err, &gs) {
		if s := gs.GRPCStatus(); s != nil && s.Message() != "" {
			return s.Message()
		}
	}
	return err.Error()
}
