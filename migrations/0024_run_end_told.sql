-- 0024 records whether a run's end was told in its thread, so a replica killed between ending a run and telling it leaves the telling to another.
ALTER TABLE runs ADD COLUMN end_told_at timestamptz;
ALTER TABLE runs ADD COLUMN end_tell_after timestamptz;
-- Runs that ended before this migration were told as they ended (or not,
-- long ago): none is told again.
UPDATE runs SET end_told_at = coalesce(ended_at, now()) WHERE state <> 'running';
CREATE INDEX runs_end_untold ON runs (end_tell_after) WHERE end_told_at IS NULL AND state <> 'running';
