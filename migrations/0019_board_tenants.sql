-- 0019 gives every board its tenant and makes board keys unique per tenant, not across all boards.

-- bobnet_tenant names the tenant of a channel key; board.TenantOf states
-- the same rule in Go, and a test holds the two to each other.
CREATE FUNCTION bobnet_tenant(p_channel text) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
SELECT CASE
    WHEN p_channel = '' THEN 'console'
    WHEN starts_with(p_channel, 'slack:') AND strpos(p_channel, '/') > 0 THEN split_part(p_channel, '/', 1)
    WHEN starts_with(p_channel, 'slack:') THEN 'slack'
    WHEN starts_with(p_channel, 'matrix:') THEN p_channel
    WHEN starts_with(p_channel, 'console:hook-') THEN 'hook:' || substr(p_channel, 14)
    WHEN starts_with(p_channel, 'webhook:') THEN 'hook:' || substr(p_channel, 9)
    WHEN starts_with(p_channel, 'console:') THEN 'console'
    ELSE p_channel
END $$;

ALTER TABLE boards ADD COLUMN tenant text GENERATED ALWAYS AS (bobnet_tenant(channel)) STORED;

-- Keys were unique across all boards, so they are unique per tenant too.
DROP INDEX boards_key;
CREATE UNIQUE INDEX boards_tenant_key ON boards (tenant, key);

-- The counters of handed-out keys start again per tenant: the key chosen
-- skips any key its tenant already has, so no count needs carrying over.
DROP FUNCTION bobnet_board_key(text);
DROP TABLE board_keys;
CREATE TABLE board_keys (
    tenant text NOT NULL,
    base   text NOT NULL,
    last   integer NOT NULL CHECK (last >= 1),
    PRIMARY KEY (tenant, base)
);

-- bobnet_board_key returns p_base when no board of p_tenant has it, else
-- the tenant's next free numbered key (NEWS2, NEWS3, …; the base is
-- shortened to fit six characters). Another tenant's keys play no part.
CREATE FUNCTION bobnet_board_key(p_tenant text, p_base text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    n integer;
    candidate text;
BEGIN
    LOOP
        INSERT INTO board_keys AS k (tenant, base, last) VALUES (p_tenant, p_base, 1)
        ON CONFLICT (tenant, base) DO UPDATE SET last = k.last + 1
        RETURNING k.last INTO n;
        IF n = 1 THEN
            candidate := p_base;
        ELSIF length(n::text) < 6 THEN
            candidate := left(p_base, 6 - length(n::text)) || n;
        ELSE
            RAISE EXCEPTION 'no free board key left for %', p_base;
        END IF;
        IF NOT EXISTS (SELECT 1 FROM boards WHERE tenant = p_tenant AND key = candidate) THEN
            RETURN candidate;
        END IF;
    END LOOP;
END $$;
