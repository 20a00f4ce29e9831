-- 0023 records when each encryption key (by its id) first sealed as a replica's current key, so every replica seals under the newest key it holds.

-- A rotation's replicas disagree for a while about which key is current
-- (BOBNET_ENCRYPTION_KEY); the key registered last is the newest, and a
-- replica holding it (in BOBNET_ENCRYPTION_KEYS_OLD too) seals under it.
CREATE TABLE encryption_keys (
    key_id        text PRIMARY KEY CHECK (key_id ~ '^[0-9a-f]{8}$'),
    current_since timestamptz NOT NULL DEFAULT clock_timestamp()
);
