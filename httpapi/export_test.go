package httpapi

// ClientRequests is how many requests one client may send a minute.
const ClientRequests = clientRequests

// Unlimited lifts the client limit, for a test that is one client sending
// a lot.
func (c *Chat) Unlimited() { c.limits = newClientLimits(1<<30, 1<<40) }

// LimitRoutes is the middleware that closes unclassified routes to
// tokens limited to channels.
var LimitRoutes = limitRoutes
