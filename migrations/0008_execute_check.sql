-- 0008 adds the check that lets an approval write its board in one round trip.

-- bobnet_executable raises SQLSTATE BN001 unless the proposal is recorded,
-- pending and not yet executed, and no other version of its chain was
-- approved. Execute sends it, after the chain's lock, at the head of the
-- batch that writes the board and commits: in the usual case that batch is
-- the whole transaction. BN001 sends Execute back to reading the state and
-- deciding in Go (a replay, a closed proposal, another version approved,
-- a proposal Postgres has no record of), as it did before this check.
CREATE FUNCTION bobnet_executable(p_id text, p_chain text) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM proposals WHERE id = p_id AND state = 'pending' AND result IS NULL)
       OR EXISTS (SELECT 1 FROM proposals WHERE chain = p_chain AND state = 'approved' AND id <> p_id) THEN
        RAISE EXCEPTION 'proposal % is not simply executable', p_id USING ERRCODE = 'BN001';
    END IF;
END
$$;
