-- 0010 makes board keys unique, so a handle such as NEWS-3 names one card wherever it is used.

-- Boards made before this migration that share a key: the oldest keeps
-- it, the others take the first free numbered key (NEWS2, NEWS3, …).
DO $$
DECLARE
    b record;
    n integer;
BEGIN
    FOR b IN SELECT id, key FROM (
        SELECT id, key, row_number() OVER (PARTITION BY key ORDER BY created_at, id) AS nth FROM boards) d
        WHERE nth > 1 ORDER BY key, nth
    LOOP
        n := 2;
        WHILE EXISTS (SELECT 1 FROM boards WHERE key = left(b.key, 6 - length(n::text)) || n) LOOP
            n := n + 1;
        END LOOP;
        UPDATE boards SET key = left(b.key, 6 - length(n::text)) || n WHERE id = b.id;
    END LOOP;
END $$;

CREATE UNIQUE INDEX boards_key ON boards (key);

-- board_keys counts, per base key, the keys handed out from it, so the
-- next free numbered key is found without scanning the boards. Its row
-- lock makes two transactions choosing from one base take turns.
CREATE TABLE board_keys (
    base text PRIMARY KEY,
    last integer NOT NULL CHECK (last >= 1)
);

-- bobnet_board_key returns p_base when no board has it, else the next free
-- numbered key (NEWS2, NEWS3, …; the base is shortened to fit six
-- characters).
CREATE FUNCTION bobnet_board_key(p_base text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    n integer;
    candidate text;
BEGIN
    LOOP
        INSERT INTO board_keys AS k (base, last) VALUES (p_base, 1)
        ON CONFLICT (base) DO UPDATE SET last = k.last + 1
        RETURNING k.last INTO n;
        IF n = 1 THEN
            candidate := p_base;
        ELSIF length(n::text) < 6 THEN
            candidate := left(p_base, 6 - length(n::text)) || n;
        ELSE
            RAISE EXCEPTION 'no free board key left for %', p_base;
        END IF;
        IF NOT EXISTS (SELECT 1 FROM boards WHERE key = candidate) THEN
            RETURN candidate;
        END IF;
    END LOOP;
END $$;
