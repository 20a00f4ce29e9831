-- 0015 keeps one row per Slack workspace (or Enterprise Grid organization) BobNet is installed in through OAuth, with its tokens sealed.

-- installation_id is the team id, or the enterprise id of an org-wide
-- install. bot_token and refresh_token are AES-256-GCM sealed
-- (nonce||ciphertext) under the key named by key_id, bound to the row and
-- column, so a database dump does not hold a usable token (docs/slack.md).
CREATE TABLE slack_installations (
    installation_id       text PRIMARY KEY,
    team_id               text NOT NULL DEFAULT '',
    team_name             text NOT NULL DEFAULT '',
    enterprise_id         text NOT NULL DEFAULT '',
    is_enterprise_install boolean NOT NULL DEFAULT false,
    bot_user_id           text NOT NULL DEFAULT '',
    app_id                text NOT NULL DEFAULT '',
    scopes                text NOT NULL DEFAULT '',
    installer_user_id     text NOT NULL DEFAULT '',
    key_id                text NOT NULL,
    bot_token             bytea NOT NULL,
    refresh_token         bytea,
    token_expires_at      timestamptz,
    installed_at          timestamptz NOT NULL DEFAULT now(),
    updated_at            timestamptz NOT NULL DEFAULT now()
);

-- Re-sealing after a key change looks for rows under other keys.
CREATE INDEX slack_installations_key_id ON slack_installations (key_id);
