-- 0003 creates the outbox of outbound webhook events: one row per event and callback URL, retried until delivered.

CREATE TABLE event_outbox (
    id              bigserial PRIMARY KEY,
    -- msg_id is the webhook-id the receiver sees, the same on every retry.
    msg_id          text NOT NULL,
    event_type      text NOT NULL,
    endpoint        text NOT NULL,
    -- body is stored as sent, so every retry carries the same bytes.
    body            bytea NOT NULL,
    attempts        integer NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    last_error      text NOT NULL DEFAULT '',
    created_at      timestamptz NOT NULL DEFAULT now(),
    delivered_at    timestamptz,
    failed_at       timestamptz,
    UNIQUE (msg_id, endpoint)
);
-- Undelivered rows per endpoint in order: deliveries to one endpoint go
-- out one at a time, oldest first.
CREATE INDEX event_outbox_pending ON event_outbox (endpoint, id) WHERE delivered_at IS NULL AND failed_at IS NULL;
