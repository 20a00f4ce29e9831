-- 0009 keeps the web console's conversation per channel, so a restart loses no history and pending proposals keep their buttons.

-- One row per event shown in a console channel (a message, a reply, a
-- preview, a preview's update), numbered per channel as the console
-- numbers them for its event stream. The console keeps the newest few
-- hundred of each channel and deletes older ones as it writes.
CREATE TABLE console_events (
    channel text NOT NULL CHECK (length(channel) BETWEEN 1 AND 64),
    id      bigint NOT NULL CHECK (id > 0),
    type    text NOT NULL CHECK (length(type) BETWEEN 1 AND 40),
    at      timestamptz NOT NULL DEFAULT now(),
    data    jsonb NOT NULL,
    PRIMARY KEY (channel, id)
);

-- The console's home lists channels by their latest activity.
CREATE INDEX console_events_latest ON console_events (at DESC);
