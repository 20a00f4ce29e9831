-- 0001 creates boards, cards, card links, proposals, audit events, channel bindings and webhook deliveries.

CREATE TABLE boards (
    id          text PRIMARY KEY,
    name        text NOT NULL CHECK (length(btrim(name)) BETWEEN 1 AND 200),
    goal        text NOT NULL DEFAULT '',
    channel     text NOT NULL DEFAULT '',
    proposal_id text,
    created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE cards (
    id                  text PRIMARY KEY,
    board_id            text NOT NULL REFERENCES boards (id) ON DELETE CASCADE,
    position            integer NOT NULL CHECK (position >= 0),
    temp_id             text NOT NULL DEFAULT '',
    title               text NOT NULL CHECK (length(btrim(title)) BETWEEN 1 AND 400),
    body                text NOT NULL CHECK (length(btrim(body)) > 0),
    assignee            text NOT NULL DEFAULT '',
    status              text NOT NULL CHECK (status IN ('Backlog', 'Ready', 'In Progress', 'Review', 'Blocked', 'Done')),
    workspace_mode      text NOT NULL DEFAULT 'Direct' CHECK (workspace_mode IN ('Direct', 'Scratch', 'Worktree')),
    acceptance_criteria jsonb NOT NULL DEFAULT '[]' CHECK (jsonb_typeof(acceptance_criteria) = 'array'),
    suggested_skills    jsonb NOT NULL DEFAULT '[]' CHECK (jsonb_typeof(suggested_skills) = 'array'),
    notes               text NOT NULL DEFAULT '',
    proposal_id         text,
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now(),
    -- The target of the composite foreign keys below, which keep both ends
    -- of a link on the same board.
    UNIQUE (board_id, id)
);
CREATE INDEX cards_board_position ON cards (board_id, position);

CREATE TABLE card_links (
    board_id   text NOT NULL,
    card_id    text NOT NULL,
    depends_on text NOT NULL,
    PRIMARY KEY (card_id, depends_on),
    CHECK (card_id <> depends_on),
    FOREIGN KEY (board_id, card_id) REFERENCES cards (board_id, id) ON DELETE CASCADE,
    FOREIGN KEY (board_id, depends_on) REFERENCES cards (board_id, id) ON DELETE CASCADE
);
CREATE INDEX card_links_board ON card_links (board_id);

-- Proposal history. Redis holds the live pending copy; this keeps every
-- version and, once approved, what its execution wrote (result), so a
-- second execution returns the first result instead of writing again.
CREATE TABLE proposals (
    id           text PRIMARY KEY,
    channel      text NOT NULL DEFAULT '',
    version      integer NOT NULL DEFAULT 1 CHECK (version >= 1),
    supersedes   text,
    requested_by text NOT NULL DEFAULT '',
    state        text NOT NULL CHECK (state IN ('pending', 'approved', 'cancelled', 'expired', 'superseded')),
    plan         jsonb NOT NULL DEFAULT '{}',
    decided_by   text NOT NULL DEFAULT '',
    board_id     text REFERENCES boards (id),
    result       jsonb,
    created_at   timestamptz NOT NULL DEFAULT now(),
    expires_at   timestamptz,
    decided_at   timestamptz,
    CHECK ((state = 'approved') = (result IS NOT NULL))
);
CREATE INDEX proposals_supersedes ON proposals (supersedes) WHERE supersedes IS NOT NULL;

CREATE TABLE audit_events (
    id          bigserial PRIMARY KEY,
    at          timestamptz NOT NULL DEFAULT now(),
    actor       text NOT NULL DEFAULT '',
    action      text NOT NULL CHECK (length(action) > 0),
    channel     text NOT NULL DEFAULT '',
    proposal_id text NOT NULL DEFAULT '',
    board_id    text NOT NULL DEFAULT '',
    detail      jsonb
);
CREATE INDEX audit_events_proposal ON audit_events (proposal_id) WHERE proposal_id <> '';
CREATE INDEX audit_events_channel ON audit_events (channel, id);
CREATE INDEX audit_events_board ON audit_events (board_id) WHERE board_id <> '';

-- The board a channel's card actions land on and /bobnet status shows.
CREATE TABLE channel_bindings (
    channel    text PRIMARY KEY,
    board_id   text NOT NULL REFERENCES boards (id) ON DELETE CASCADE,
    updated_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE webhook_deliveries (
    hook        text NOT NULL,
    delivery_id text NOT NULL,
    request_id  text NOT NULL,
    received_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (hook, delivery_id)
);
