//go:build goolm

package matrix

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/crypto"
	"maunium.net/go/mautrix/id"

	"github.com/bobnet/bobnet/board"
)

// crossSign makes the bot's device verified by its owner, as Element
// shows it: the account gets cross-signing keys (master, self-signing,
// user-signing) on the first start, the self-signing key signs the
// bot's device and the device signs the master key. Without it every bot
// message carries Element's red shield, and a client that shares room keys
// only with verified devices withholds them from the bot.
//
// The private seeds are saved in Postgres, sealed with a key derived from
// the pickle key, so every later start (and every replica) uses the same
// identity instead of making a new one that people's clients would warn
// about. An account whose keys were made elsewhere (Element logged in as
// the bot) is left alone: BobNet does not hold those keys and replacing
// them would reset the identity people trust.
func (a *Adapter) crossSign(ctx context.Context, mach *crypto.OlmMachine, pickleKey string) error {
	user := a.cfg.UserID
	published, err := a.publishedKeys(ctx)
	if err != nil {
		return err
	}
	saved, err := a.store.MatrixCrossSigning(ctx, string(user))
	if errors.Is(err, board.ErrNotFound) {
		if published.master != "" {
			return fmt.Errorf("%w: the account already has cross-signing keys (master %s) that BobNet did not make", ErrForeignCrossSigning, published.master)
		}
		if err := a.newCrossSigning(ctx, mach, pickleKey); err != nil {
			return err
		}
		// Another replica may have saved its own first: use what was kept.
		saved, err = a.store.MatrixCrossSigning(ctx, string(user))
	}
	if err != nil {
		return err
	}
	plain, err := unseal(pickleKey, user, saved.Sealed)
	if err != nil {
		return err
	}
	var seeds crypto.CrossSigningSeeds
	if err := json.Unmarshal(plain, &seeds); err != nil {
		return fmt.Errorf("%w: %w", ErrSealed, err)
	}
	if err := mach.ImportCrossSigningKeys(seeds); err != nil {
		return fmt.Errorf("import cross-signing keys: %w", err)
	}
	keys := mach.CrossSigningKeys
	switch published.master {
	case keys.MasterKey.PublicKey():
	case "":
		if err := a.call(ctx, "publish cross-signing keys", func(ctx context.Context) error {
			return mach.PublishCrossSigningKeys(ctx, keys, a.passwordAuth)
		}); err != nil {
			return err
		}
		a.logger.Info("matrix: published the bot's cross-signing keys", "master_key", keys.MasterKey.PublicKey())
		published = ownKeys{master: keys.MasterKey.PublicKey()}
	default:
		return fmt.Errorf("%w: the account's master key is %s, BobNet holds %s", ErrForeignCrossSigning, published.master, keys.MasterKey.PublicKey())
	}
	if !published.deviceSigned {
		if err := a.call(ctx, "sign own device", func(ctx context.Context) error {
			return mach.SignOwnDevice(ctx, mach.OwnIdentity())
		}); err != nil {
			return err
		}
		a.logger.Info("matrix: signed the bot's device with its self-signing key", "device", a.cli.DeviceID)
	}
	if !published.masterSigned {
		if err := a.call(ctx, "sign own master key", mach.SignOwnMasterKey); err != nil {
			return err
		}
	}
	return nil
}

// ErrForeignCrossSigning is wrapped when the account's published
// cross-signing keys are not the ones BobNet holds.
var ErrForeignCrossSigning = errors.New("matrix: cross-signing keys not made by BobNet")

// newCrossSigning makes cross-signing keys and saves them sealed (unless
// another replica saved some first). They are published afterwards, so a
// crash in between leaves keys that the next start publishes.
func (a *Adapter) newCrossSigning(ctx context.Context, mach *crypto.OlmMachine, pickleKey string) error {
	keys, err := mach.GenerateCrossSigningKeys()
	if err != nil {
		return fmt.Errorf("make cross-signing keys: %w", err)
	}
	plain, err := json.Marshal(keys.Seeds())
	if err != nil {
		return fmt.Errorf("make cross-signing keys: %w", err)
	}
	sealed, err := seal(pickleKey, a.cfg.UserID, plain)
	if err != nil {
		return err
	}
	return a.store.AddMatrixCrossSigning(ctx, string(a.cfg.UserID), board.MatrixCrossSigning{MasterKey: string(keys.MasterKey.PublicKey()), Sealed: sealed})
}

// ownKeys is what the homeserver publishes of the bot's cross-signing.
type ownKeys struct {
	master, selfSigning id.Ed25519
	// deviceSigned: the bot's device key carries the self-signing key's
	// signature; masterSigned: the master key carries the device's.
	deviceSigned, masterSigned bool
}

// publishedKeys asks the homeserver for the bot's own keys.
func (a *Adapter) publishedKeys(ctx context.Context) (ownKeys, error) {
	user, device := a.cfg.UserID, a.cli.DeviceID
	var resp *mautrix.RespQueryKeys
	err := a.call(ctx, "query own keys", func(ctx context.Context) error {
		var err error
		resp, err = a.cli.QueryKeys(ctx, &mautrix.ReqQueryKeys{DeviceKeys: mautrix.DeviceKeysRequest{user: {}}})
		return err
	})
	if err != nil {
		return ownKeys{}, err
	}
	var out ownKeys
	if mk, ok := resp.MasterKeys[user]; ok {
		out.master = mk.FirstKey()
		_, out.masterSigned = mk.Signatures[user][id.NewKeyID(id.KeyAlgorithmEd25519, device.String())]
	}
	if sk, ok := resp.SelfSigningKeys[user]; ok {
		out.selfSigning = sk.FirstKey()
	}
	if dk, ok := resp.DeviceKeys[user][device]; ok && out.selfSigning != "" {
		_, out.deviceSigned = dk.Signatures[user][id.NewKeyID(id.KeyAlgorithmEd25519, out.selfSigning.String())]
	}
	return out, nil
}

// passwordAuth answers the homeserver's user-interactive auth for
// publishing cross-signing keys with the bot's password. Servers let an
// account publish its first keys without it; replacing keys needs it.
func (a *Adapter) passwordAuth(resp *mautrix.RespUserInteractive) any {
	if a.cfg.Password == "" {
		return nil
	}
	return &mautrix.ReqUIAuthLogin{
		BaseAuthData: mautrix.BaseAuthData{Type: mautrix.AuthTypePassword, Session: resp.Session},
		User:         a.cfg.UserID.String(),
		Password:     a.cfg.Password,
	}
}
