-- 0002 ties every version of a proposal to its revision chain, so at most one version of a request is ever approved, and lets an audit event be written exactly once by a key.

-- chain is the id of the chain's first version; a proposal that was never
-- revised is its own chain. Execute locks on it and refuses a second
-- approved version. BobNet always sets it; rows written before it existed
-- get their own id.
ALTER TABLE proposals ADD COLUMN chain text;
UPDATE proposals SET chain = id WHERE chain IS NULL;
CREATE INDEX proposals_chain_approved ON proposals (chain) WHERE state = 'approved';

-- dedupe_key makes an audit write idempotent: a worker that takes a request
-- again after a crash does not record "requested" twice. NULLs never clash.
ALTER TABLE audit_events ADD COLUMN dedupe_key text;
CREATE UNIQUE INDEX audit_events_dedupe ON audit_events (dedupe_key);
