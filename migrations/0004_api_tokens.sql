-- 0004 creates API tokens: named, with scopes, optionally bound to one user, stored only as SHA-256 hashes.

CREATE TABLE api_tokens (
    name       text PRIMARY KEY CHECK (name ~ '^[a-z0-9][a-z0-9_.-]{0,63}$'),
    hash       bytea NOT NULL UNIQUE,
    scopes     text[] NOT NULL,
    bound_user text NOT NULL DEFAULT '',
    created_at timestamptz NOT NULL DEFAULT now(),
    revoked_at timestamptz
);
