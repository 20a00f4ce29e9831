-- Matrix review announcements: the notice that a run's card waits in Review, so a reaction on it reviews that card.
CREATE TABLE matrix_reviews (
    room_id    text NOT NULL,
    event_id   text NOT NULL,
    thread_id  text NOT NULL,
    run_id     text NOT NULL,
    card_id    text NOT NULL,
    handle     text NOT NULL,
    round      integer NOT NULL,
    created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (room_id, event_id)
);
-- A decided review edits its card's latest announcement.
CREATE INDEX matrix_reviews_card ON matrix_reviews (room_id, run_id, card_id, created_at DESC);
