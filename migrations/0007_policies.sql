-- 0007 creates approval policies per channel, the approvals given so far per proposal, the policy in force on each proposal, and model token use per channel and day.

-- channel is a channel key ("slack:C0123"), a source's default ("matrix:*")
-- or "default". source says who set it: rows from the policy file are
-- rewritten at start, rows set through the API are kept.
CREATE TABLE policies (
    channel    text PRIMARY KEY CHECK (length(channel) BETWEEN 1 AND 300),
    policy     jsonb NOT NULL CHECK (jsonb_typeof(policy) = 'object'),
    source     text NOT NULL CHECK (source IN ('file', 'api')),
    updated_by text NOT NULL DEFAULT '',
    updated_at timestamptz NOT NULL DEFAULT now()
);

-- The policy in force when the proposal was made: later changes of the
-- channel's policy do not reach it.
ALTER TABLE proposals ADD COLUMN policy jsonb;

-- One row per person who approved a proposal that needs more than one
-- approval; a withdrawal deletes the row (the audit keeps both).
CREATE TABLE proposal_approvals (
    proposal_id text NOT NULL REFERENCES proposals (id) ON DELETE CASCADE,
    user_id     text NOT NULL CHECK (length(user_id) > 0),
    at          timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (proposal_id, user_id)
);

-- Model tokens spent per channel and UTC day, against the channel's budget.
CREATE TABLE model_usage (
    channel text NOT NULL,
    day     date NOT NULL,
    tokens  bigint NOT NULL DEFAULT 0 CHECK (tokens >= 0),
    PRIMARY KEY (channel, day)
);
