-- 0016 gives a card dispatched to another tool (runner hook:<name>) a callback token: only its SHA-256 is kept, one per card of a run, replaced at each dispatch.

-- token_hash is the SHA-256 of the bearer token the tool posts the card's
-- output with. A new dispatch (after a send back, or a failed attempt)
-- writes a new hash, so the earlier token is refused; the token is good
-- only for its own card of its own run, and only while the run runs.
ALTER TABLE run_cards ADD COLUMN token_hash bytea CHECK (token_hash IS NULL OR octet_length(token_hash) = 32);
CREATE UNIQUE INDEX run_cards_token ON run_cards (token_hash) WHERE token_hash IS NOT NULL;
