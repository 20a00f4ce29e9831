// Package slack puts BobNet in Slack: signed Events API, interactivity and
// slash-command endpoints, Block Kit previews with Approve / Revise /
// Cancel, the Revise modal, and /bobnet status.
package slack
