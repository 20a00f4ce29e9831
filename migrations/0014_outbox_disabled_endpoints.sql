-- 0014 remembers the callback endpoints that asked BobNet to stop (410 Gone), so no replica sends to them again.

-- A callback endpoint that answered 410 Gone, as the Standard Webhooks
-- specification advises: its pending events are given up and new ones
-- are not sent. Deleting the row enables it again.
CREATE TABLE callback_endpoints_disabled (
    endpoint    text PRIMARY KEY,
    disabled_at timestamptz NOT NULL DEFAULT now(),
    reason      text NOT NULL DEFAULT ''
);
