-- 0005 gives boards a handle key and creation thread, and cards a number (NEWS-3), a version and done criteria.

-- key is the short prefix of card handles (NEWS in NEWS-3); thread is the
-- chat thread the board was approved in, where board events are told.
-- New boards get their key from BobNet (the longest word of the name);
-- boards made before this migration take the name's first four letters.
ALTER TABLE boards
    ADD COLUMN key    text NOT NULL DEFAULT 'CARD' CHECK (key ~ '^[A-Z][A-Z0-9]{0,5}$'),
    ADD COLUMN thread text NOT NULL DEFAULT '';

UPDATE boards SET key = coalesce(nullif(upper(left(regexp_replace(name, '[^A-Za-z0-9]', '', 'g'), 4)), ''), 'CARD')
WHERE upper(left(regexp_replace(name, '[^A-Za-z0-9]', '', 'g'), 4)) ~ '^[A-Z][A-Z0-9]{0,5}$';

-- number is the card's place on its board, 1-based and never reused, in
-- the order cards were added; version counts the changes made to a card
-- since it was created.
ALTER TABLE cards
    ADD COLUMN number        integer,
    ADD COLUMN version       integer NOT NULL DEFAULT 1 CHECK (version >= 1),
    ADD COLUMN criteria_done jsonb NOT NULL DEFAULT '[]' CHECK (jsonb_typeof(criteria_done) = 'array');

UPDATE cards c SET number = n.number
FROM (SELECT id, row_number() OVER (PARTITION BY board_id ORDER BY created_at, position, id) AS number FROM cards) n
WHERE n.id = c.id;

ALTER TABLE cards ALTER COLUMN number SET NOT NULL;
ALTER TABLE cards ADD CONSTRAINT cards_number_positive CHECK (number >= 1);
CREATE UNIQUE INDEX cards_board_number ON cards (board_id, number);
