package matrix

import "sync"

// lazy is a value made on its first use rather than when the program
// starts: a server that does not speak Matrix never makes it, and its
// start-up runs none of the code that would (a package's start-up code
// and what it touches stay resident: idle memory, docs/operations.md).
// Declared as &lazy[T]{build: func() T {…}}, with a function that captures
// nothing, it is laid out by the linker and costs nothing at start.
type lazy[T any] struct {
	once  sync.Once
	v     T
	build func() T
}

// get makes the value the first time and returns it.
func (l *lazy[T]) get() T {
	l.once.Do(func() { l.v = l.build() })
	return l.v
}
