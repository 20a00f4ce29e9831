package board

// The Matrix adapter's rows, as the store reads and writes them (see
// store/matrix.go). Ids are Matrix's own strings (user, device, room and
// event ids), so neither board nor store depends on a Matrix library; the
// adapter converts them to and from its client's types.

// MatrixSession is the Matrix bot's login as it was last saved, so a
// restart reuses its device rather than making a new one.
type MatrixSession struct {
	DeviceID    string
	AccessToken string
}

// MatrixCrossSigning is the Matrix bot's cross-signing identity as saved:
// the public master key and the private seeds sealed by the adapter, which
// every replica must share for the bot's devices to be trusted.
type MatrixCrossSigning struct {
	MasterKey string
	Sealed    []byte
}

// MatrixReview is a Matrix notice announcing a runner's card in review,
// so a reaction on it reviews that card: the thread it was posted in and
// the card of the run, with its handle and the round it was announced in.
type MatrixReview struct {
	Thread string
	Run    RunID
	Card   CardID
	Handle string
	Round  int
}
