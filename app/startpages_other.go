//go:build !linux

package app

import "errors"

// releaseStartPages does nothing off Linux, which has no MADV_PAGEOUT.
func releaseStartPages() (int, error) {
	return 0, errors.New("only on Linux")
}
