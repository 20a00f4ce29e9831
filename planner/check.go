package planner

import "github.com/bobnet/bobnet/plan"

// Check parses, validates and normalizes one raw model output. It reports
// every problem it finds, not only the first; Result.Plan is set whenever
// the output held an object, so a person can see what the model meant.
func Check(raw []byte, opts plan.Options) plan.Result {
	res := plan.Result{Errors: []plan.Issue{}, Warnings: []plan.Issue{}}
	obj, err := Parse(raw)
	if err != nil {
		res.Errors = append(res.Errors, plan.Issue{Path: "", Message: err.Error()})
		return res
	}
	return plan.CheckJSON(obj, opts)
}
