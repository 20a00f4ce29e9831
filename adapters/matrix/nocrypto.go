//go:build !goolm

package matrix

import (
	"context"
	"fmt"
)

// cryptoCloser is the encryption machinery's shutdown.
type cryptoCloser interface{ Close() error }

// initCrypto refuses: this binary was built without the pure-Go Olm
// implementation that encryption needs.
func (a *Adapter) initCrypto(context.Context, Encryption) error {
	return fmt.Errorf("%w: end-to-end encryption needs BobNet built with -tags goolm", ErrConfig)
}
