//go:build !linux

package volume

import (
	"context"
	"errors"
)

func diskUsage(context.Context, string, UsageLimits) (Usage, error) {
	return Usage{}, errors.New("disk usage needs Linux")
}
