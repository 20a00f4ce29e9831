-- 0018: a holder names one taking of one card (a fresh id per claim), so
-- it is unique. The index finds a runner's card by its holder, and tells
-- the planner that at most one row matches, so the statements that read
-- a claimed card back keep one plan instead of being planned per call.
CREATE UNIQUE INDEX run_cards_holder ON run_cards (holder) WHERE holder <> '';
