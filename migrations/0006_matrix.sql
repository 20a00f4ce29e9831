-- 0006 keeps the Matrix adapter's session (device, token, sync position) and the previews and threads it posted.

CREATE TABLE matrix_sessions (
    user_id      text PRIMARY KEY,
    device_id    text NOT NULL DEFAULT '',
    access_token text NOT NULL DEFAULT '',
    filter_id    text NOT NULL DEFAULT '',
    next_batch   text NOT NULL DEFAULT '',
    updated_at   timestamptz NOT NULL DEFAULT now()
);

-- A preview is found again from a reaction (by its event id) or from a
-- command in its thread (the newest preview of the thread).
CREATE TABLE matrix_previews (
    room_id     text NOT NULL,
    event_id    text NOT NULL,
    thread_id   text NOT NULL,
    proposal_id text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (room_id, event_id)
);
CREATE INDEX matrix_previews_thread ON matrix_previews (room_id, thread_id, created_at DESC);

-- Threads BobNet speaks in: a plain reply there is a request too.
CREATE TABLE matrix_threads (
    room_id    text NOT NULL,
    thread_id  text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (room_id, thread_id)
);
