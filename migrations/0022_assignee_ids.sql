-- 0022 turns card assignees that are chat mentions into person ids (slack:T…/U…, slack:U…, matrix:@user:server), and indexes assignees.

-- A Slack mention (<@U123> or <@U123|name>) on a board of a Slack channel
-- names a person of that channel's installation: slack:T…/U… (tenant
-- slack:T…), or slack:U… in a single-workspace BobNet (tenant slack).
-- board.Person states the same ids in Go.
UPDATE cards c
SET assignee = CASE WHEN b.tenant = 'slack' THEN 'slack:' ELSE b.tenant || '/' END
    || substring(c.assignee FROM '^<@([UW][A-Z0-9_]+)(?:\|[^>]*)?>$')
FROM boards b
WHERE b.id = c.board_id
  AND (b.tenant = 'slack' OR starts_with(b.tenant, 'slack:'))
  AND c.assignee ~ '^<@[UW][A-Z0-9_]+(\|[^>]*)?>$';

-- A Matrix user id (@user:server) on a Matrix room's board is that user.
UPDATE cards c
SET assignee = 'matrix:' || c.assignee
FROM boards b
WHERE b.id = c.board_id
  AND starts_with(b.tenant, 'matrix:!')
  AND length(c.assignee) <= 255
  AND c.assignee ~ '^@[!-9;-~]+:[][A-Za-z0-9.:-]+$';

-- Every other assignee is a role (a profile) and stays as it is.

-- An App Home lists the unfinished cards of one person id.
CREATE INDEX cards_assignee ON cards (assignee) WHERE status <> 'Done';
