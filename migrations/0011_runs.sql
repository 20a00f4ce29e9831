-- 0011 adds runs: a board worked once, its cards reset to their starting
-- statuses, numbered per board (NEWS run 12), one at a time per board.

CREATE TABLE runs (
    id         text PRIMARY KEY,
    board_id   text NOT NULL REFERENCES boards (id) ON DELETE CASCADE,
    number     integer NOT NULL CHECK (number >= 1),
    state      text NOT NULL CHECK (state IN ('running', 'done', 'stopped', 'timed_out')),
    started_by text NOT NULL DEFAULT '',
    -- trigger is what started it: manual (chat, page, API), schedule or
    -- catch_up (slots missed while BobNet was down).
    trigger    text NOT NULL DEFAULT 'manual' CHECK (trigger IN ('manual', 'schedule', 'catch_up')),
    started_at timestamptz NOT NULL DEFAULT now(),
    deadline   timestamptz NOT NULL,
    ended_at   timestamptz,
    -- reason says why a run stopped or timed out.
    reason     text NOT NULL DEFAULT '',
    UNIQUE (board_id, number),
    CHECK ((state = 'running') = (ended_at IS NULL))
);
-- One run at a time per board, whatever the replicas do.
CREATE UNIQUE INDEX runs_one_running ON runs (board_id) WHERE state = 'running';

-- A card of a run: who works it and what came of it. The card's status is
-- the board's own (cards.status), so people, the page and the runners see
-- one status.
CREATE TABLE run_cards (
    run_id      text NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    card_id     text NOT NULL REFERENCES cards (id) ON DELETE CASCADE,
    -- runner: 'model', 'hook:<name>', or '' when people work the card.
    runner      text NOT NULL DEFAULT '',
    review      boolean NOT NULL DEFAULT true,
    output      text NOT NULL DEFAULT '' CHECK (octet_length(output) <= 262144),
    attempts    integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    -- rounds counts sends back; feedback is the latest reason, given to
    -- the next attempt.
    rounds      integer NOT NULL DEFAULT 0 CHECK (rounds BETWEEN 0 AND 3),
    feedback    text NOT NULL DEFAULT '',
    error       text NOT NULL DEFAULT '',
    -- A runner holds a card until lease_until; past it (the replica died)
    -- another takes it. holder names the taking, so a runner whose lease
    -- ended cannot write over its successor's work.
    holder      text NOT NULL DEFAULT '',
    lease_until timestamptz,
    started_at  timestamptz,
    finished_at timestamptz,
    PRIMARY KEY (run_id, card_id)
);
CREATE INDEX run_cards_card ON run_cards (card_id);

-- A board's schedule: five-field cron in an IANA time zone. last_slot is
-- the latest slot fired (or the time the schedule was set), so a slot
-- fires once across replicas: firing moves it forward with a
-- compare-and-set.
CREATE TABLE schedules (
    board_id   text PRIMARY KEY REFERENCES boards (id) ON DELETE CASCADE,
    cron       text NOT NULL CHECK (length(cron) BETWEEN 9 AND 100),
    timezone   text NOT NULL CHECK (length(timezone) BETWEEN 1 AND 64),
    set_by     text NOT NULL DEFAULT '',
    last_slot  timestamptz NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
