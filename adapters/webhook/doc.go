// Package webhook lets other tools start plans: POST /api/v1/hooks/{name}
// verifies the sender's signature (BobNet's, GitHub's or Standard
// Webhooks'), remembers the delivery (its signed webhook-id, or its body's
// digest) in Postgres so redeliveries and replays make nothing new, filters the event, renders its payload into a request with
// the hook's template, and hands it to the engine for the hook's channel.
package webhook
