//go:build !linux

package volume

import (
	"context"
	"errors"
)

func diskUsage(context.Context, string, UsageLimits, []string) (Usage, map[string]Usage, error) {
	return Usage{}, nil, errors.New("disk usage needs Linux")
}
