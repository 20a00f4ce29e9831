-- 0021: a schedule's cron is five cron fields or a descriptor (@daily), as
-- plan.ParseSchedule says; the old length check (9 to 100 characters)
-- refused the descriptors the rule accepts.
--
-- Stored expressions get single spaces between their fields, as the rule
-- writes them; a row that still is neither (an @every, a stray word) can
-- never fire and is removed, audited as schedule_removed.
UPDATE schedules SET cron = regexp_replace(btrim(cron), '\s+', ' ', 'g')
WHERE cron <> regexp_replace(btrim(cron), '\s+', ' ', 'g');

INSERT INTO audit_events (actor, action, channel, board_id, detail)
SELECT 'bobnet', 'schedule_removed', b.channel, b.id,
    jsonb_build_object('cron', s.cron, 'timezone', s.timezone, 'why', 'not five cron fields or a descriptor (migration 0021)')
FROM schedules s JOIN boards b ON b.id = s.board_id
WHERE NOT (s.cron IN ('@hourly', '@daily', '@weekly', '@monthly', '@yearly')
    OR s.cron ~ '^[0-9A-Za-z*?,/-]+( [0-9A-Za-z*?,/-]+){4}$');

DELETE FROM schedules
WHERE NOT (cron IN ('@hourly', '@daily', '@weekly', '@monthly', '@yearly')
    OR cron ~ '^[0-9A-Za-z*?,/-]+( [0-9A-Za-z*?,/-]+){4}$');

ALTER TABLE schedules DROP CONSTRAINT schedules_cron_check;
ALTER TABLE schedules ADD CONSTRAINT schedules_cron_rule CHECK (
    length(cron) BETWEEN 1 AND 100
    AND (cron IN ('@hourly', '@daily', '@weekly', '@monthly', '@yearly')
        OR cron ~ '^[0-9A-Za-z*?,/-]+( [0-9A-Za-z*?,/-]+){4}$'));
