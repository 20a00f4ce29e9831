-- 0013 makes an execution's write of its proposal's state a compare-and-set.

-- bobnet_changed raises SQLSTATE BN002 when a compare-and-set of a
-- proposal's state (an UPDATE or upsert WHERE state = 'pending') changed no
-- row: the proposal was no longer pending. Execute writes the approved
-- state through it in the batch that commits the board, so a state written
-- meanwhile by a session that did not take the chain's lock fails the
-- whole transaction instead of being overwritten.
CREATE FUNCTION bobnet_changed(p_id text, n bigint) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    IF n = 0 THEN
        RAISE EXCEPTION 'proposal % is no longer pending', p_id USING ERRCODE = 'BN002';
    END IF;
END
$$;
