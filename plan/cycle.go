package plan

import "slices"

// FindCycle returns one cycle of a dependency graph (deps maps a node to
// the nodes it depends on) as a path whose last node repeats its first, or
// nil when there is none. Nodes are tried as starting points in order, and
// each node's dependencies in the order deps gives, so the same graph
// always gets the same report. The plan validator, the check of changes to
// a board, and the board store's own check before it writes all use it.
func FindCycle[K comparable](deps map[K][]K, order []K) []K {
	const (
		unvisited = iota
		onStack
		done
	)
	state := map[K]int{}
	var stack []K
	var visit func(k K) []K
	visit = func(k K) []K {
		state[k] = onStack
		stack = append(stack, k)
		for _, d := range deps[k] {
			switch state[d] {
			case onStack:
				return append(slices.Clone(stack[slices.Index(stack, d):]), d)
			case unvisited:
				if c := visit(d); c != nil {
					return c
				}
			}
		}
		stack = stack[:len(stack)-1]
		state[k] = done
		return nil
	}
	for _, k := range order {
		if state[k] == unvisited {
			if c := visit(k); c != nil {
				return c
			}
		}
	}
	return nil
}
