-- SetDraftAnswer: record what a request's draft became, only on a draft
-- that is recorded (a key that ran out is not brought back without its
-- message). KEYS[1] the draft's hash, ARGV[1] the answer.
if redis.call('EXISTS', KEYS[1]) == 1 then
	return redis.call('HSET', KEYS[1], 'answer', ARGV[1])
end
return false
