-- 0020 limits API tokens to channels: exact channel keys or prefixes ending in *; none means every channel.
ALTER TABLE api_tokens ADD COLUMN channels text[] NOT NULL DEFAULT '{}' CHECK ('' <> ALL (channels));
