package reason

import (
	"errors"
	"fmt"
)

// reasonError carries a kubelet reason (a sentinel) and the human message
// that goes with it into the container's waiting state.
type reasonError struct {
	reason  error
	message string
}

func (e *reasonError) Error() string { return e.reason.Error() + ": " + e.message }
func (e *reasonError) Unwrap() error { return e.reason }

// New returns an error with the given reason (errors.Is finds it) and
// message.
func New(reason error, format string, args ...any) error {
	return &reasonError{reason: reason, message: fmt.Sprintf(format, args...)}
}

// Split splits an error into the kubelet-style reason and message: an
// error New did not make has no reason, and its whole text is the message.
func Split(err error) (string, string) {
	var re *reasonError
	if errors.As(err, &re) {
		return re.reason.Error(), re.message
	}
	return "", err.Error()
}
