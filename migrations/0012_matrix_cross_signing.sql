-- 0012 keeps the Matrix bot's private cross-signing keys, so its device is verified by its owner and a restart keeps the same identity.

-- sealed holds the three private seeds (master, self-signing, user-signing)
-- encrypted with a key derived from MATRIX_PICKLE_KEY, like the Olm account
-- pickle; master_key is the public master key, for logs and comparison with
-- what the homeserver publishes. A row is written once and never replaced.
CREATE TABLE matrix_cross_signing (
    user_id    text PRIMARY KEY,
    master_key text NOT NULL,
    sealed     bytea NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
